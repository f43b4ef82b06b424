"""The real node's network: a network namespace of its own, a veth pair to this machine (the API server calls the
kubelet at the node end's address), loopback up; the pods' bridge is made inside it by the CNI plugin, so nothing
of the machine's own network changes beyond the veth's host end. Deleting the namespace removes both veth ends."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

PREFIX = "gkd-node"  # netns names: gkd-node-<creator pid>-<index>; links: gkdh<index> (host), gkdn<index> (node)
MAX_NODES = 64


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def namespaces() -> list[str]:
    """The names of this machine's named network namespaces (ip netns list)."""
    return [line.split()[0] for line in _ip("netns", "list").stdout.splitlines() if line.strip()]


def links() -> list[str]:
    """The names of this machine's network links (in the current namespace)."""
    return [line.split()[0].split("@")[0] for line in _ip("-br", "link").stdout.splitlines() if line.strip()]


def remove_stale() -> list[str]:
    """Delete node namespaces whose creating process is gone (a test process killed before its cleanup); their
    names."""
    removed = []
    for name in namespaces():
        parts = name.split("-")
        if name.startswith(PREFIX + "-") and len(parts) == 4 and parts[2].isdigit() and not os.path.exists(f"/proc/{parts[2]}"):
            _ip("netns", "del", name, check=False)
            removed.append(name)
    return removed


@dataclass(frozen=True)
class NodeNetwork:
    """One node's addresses: the veth's host end HOST_IP/30 and node end NODE_IP/30, the pods' /24."""

    name: str
    index: int

    @property
    def host_if(self) -> str:
        return f"gkdh{self.index}"

    @property
    def node_if(self) -> str:
        return f"gkdn{self.index}"

    @property
    def host_ip(self) -> str:
        return f"10.213.{self.index}.1"

    @property
    def node_ip(self) -> str:
        return f"10.213.{self.index}.2"

    @property
    def pod_subnet(self) -> str:
        return f"10.214.{self.index}.0/24"

    @property
    def path(self) -> str:
        return f"/run/netns/{self.name}"

    @classmethod
    def create(cls) -> NodeNetwork:
        """A new namespace with the first free index, its veth pair addressed and up."""
        remove_stale()
        taken_links, taken_ns = set(links()), set(namespaces())
        for index in range(MAX_NODES):
            net = cls(f"{PREFIX}-{os.getpid()}-{index}", index)
            if net.host_if not in taken_links and net.name not in taken_ns:
                break
        else:
            raise RuntimeError(f"no free node network index below {MAX_NODES} (ip netns list: {sorted(taken_ns)})")
        _ip("netns", "add", net.name)
        try:
            _ip("link", "add", net.host_if, "type", "veth", "peer", "name", net.node_if)
            _ip("link", "set", net.node_if, "netns", net.name)
            _ip("addr", "add", f"{net.host_ip}/30", "dev", net.host_if)
            _ip("link", "set", net.host_if, "up")
            _ip("-n", net.name, "addr", "add", f"{net.node_ip}/30", "dev", net.node_if)
            _ip("-n", net.name, "link", "set", net.node_if, "up")
            _ip("-n", net.name, "link", "set", "lo", "up")
        except BaseException:
            net.delete()
            raise
        return net

    def exec_argv(self, *argv: str) -> list[str]:
        """``argv`` run inside the namespace (nsenter: unlike `ip netns exec`, /sys keeps its cgroup mounts)."""
        return ["nsenter", f"--net={self.path}", *argv]

    def delete(self) -> None:
        """Remove the namespace (its veth end, and so the pair, goes with it) and the host end if still there."""
        if self.name in namespaces():
            _ip("netns", "del", self.name)
        if self.host_if in links():
            _ip("link", "del", self.host_if, check=False)

    def leftovers(self) -> list[str]:
        """What of this network still exists (empty once deleted)."""
        return [f"netns {self.name}" for _ in (1,) if self.name in namespaces()] + [
            f"link {name}" for name in links() if name in (self.host_if, self.node_if)
        ]
