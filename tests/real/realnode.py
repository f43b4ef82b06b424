"""RealNode: a real Kubernetes node joined to a ControlPlane: containerd + runc + the CNI bridge and the kubelet
v1.20.2 (scripts/realnode), in a network namespace of its own (tests/real/nodenet.py) and in a PID and mount
namespace of their own, so that stopping it ends every process (shims and containers too: the kernel kills a PID
namespace with its init) and every mount; then the containers' cgroups are removed and the network namespace
deleted."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import yaml

from gitops_kd.testing import wait_for
from kubeplumb.rest import RestClient
from tests.real.controlplane import ROOT, ControlPlane, ControlPlaneError, _tail, die_with_parent
from tests.real.kubeconfig import write_kubeconfig
from tests.real.nodeconfig import cni_conflist, containerd_config, kubelet_config
from tests.real.nodeimages import SANDBOX_IMAGE, node_images
from tests.real.nodenet import NodeNetwork
from tests.real.pki import node_pairs

NODE_NAME = "real-node"
CGROUP_FS = Path("/sys/fs/cgroup")
CONTAINERD_CGROUP = "k8s.io"  # with cgroupsPerQOS false the kubelet names no cgroup parent: containerd uses /k8s.io/<id>
NODE_RBAC = {  # RBAC's system:node role for the kubelets' group (the API server runs without the Node authorizer)
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "gitops-kd-test:nodes"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node"},
    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}],
}


def node_tools(*, show_progress: bool = False) -> dict[str, Path]:
    """scripts/realnode's outputs (kubelet, containerd, ctr, runc, cni, busybox, bash); installs and builds on
    first use. show_progress: its messages go straight to stderr (else into the error, if it fails)."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "realnode")], stdout=subprocess.PIPE, text=True, stderr=None if show_progress else subprocess.PIPE
    )
    if done.returncode != 0:
        raise ControlPlaneError(f"scripts/realnode failed: {(done.stderr or 'see its messages above').strip()}")
    return {k: Path(v) for k, v in (line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)}


class RealNode:
    """`with RealNode(cp, folder) as node:` starts the node (the sandbox and hello image archives imported into its
    containerd) and waits for its Node to be Ready; on exit nothing of it is left (``leftovers()``)."""

    def __init__(self, cp: ControlPlane, workdir: Path, name: str = NODE_NAME) -> None:
        self.cp, self.workdir, self.name = cp, workdir, name
        self.net: NodeNetwork | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.forwarder: subprocess.Popen[str] | None = None
        self.init_pid = 0  # the node's PID namespace init, as this machine sees it
        self.ctr: Path | None = None
        self.containers: set[str] = set()  # every container id seen at stop (their cgroups are removed after)
        self.start_seconds = 0.0
        self.socket = workdir / "containerd.sock"
        self.storage = workdir / "storage"  # the PersistentVolumes' folders (tests/real/nodeagent.py)

    @property
    def node_ip(self) -> str:
        assert self.net is not None
        return self.net.node_ip

    def __enter__(self) -> RealNode:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        began = time.monotonic()
        tools = node_tools()
        self.ctr = tools["ctr"]
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.storage.mkdir(exist_ok=True)
        net = self.net = NodeNetwork.create()
        self._forward_api_server(net)
        assert self.cp.pki is not None
        client_pair, serving = node_pairs(self.workdir / "pki", self.cp.pki.ca, self.name, net.node_ip)
        kubeconfig = write_kubeconfig(
            self.workdir / "kubelet.kubeconfig", self.cp.server, self.cp.pki.ca.cert, cert=client_pair.cert, key=client_pair.key
        )
        self.cp.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(NODE_RBAC))
        conf = self.workdir / "conf"
        (conf / "cni").mkdir(parents=True, exist_ok=True)
        (conf / "cni" / "10-gitops-kd-node.conflist").write_text(cni_conflist(net.pod_subnet, self.workdir / "cni-ipam"))
        (conf / "containerd.toml").write_text(
            containerd_config(self.workdir / "containerd", self.socket, tools["runc"], tools["cni"], conf / "cni", SANDBOX_IMAGE)
        )
        (conf / "kubelet.yaml").write_text(kubelet_config(net.node_ip, self.cp.pki.ca.cert, serving.cert, serving.key))
        kubelet_argv = [
            str(tools["kubelet"]),
            f"--config={conf / 'kubelet.yaml'}",
            f"--kubeconfig={kubeconfig}",
            "--container-runtime=remote",
            f"--container-runtime-endpoint=unix://{self.socket}",
            f"--hostname-override={self.name}",
            f"--node-ip={net.node_ip}",
            f"--root-dir={self.workdir / 'kubelet'}",
            f"--cert-dir={self.workdir / 'kubelet-pki'}",
            f"--volume-plugin-dir={self.workdir / 'volume-plugins'}",
            "--v=2",
        ]
        ctr = f"{shlex.quote(str(tools['ctr']))} --address {shlex.quote(str(self.socket))} -n k8s.io"
        script = "\n".join(
            [
                "set -e",
                # every default path of containerd, runc, the CNI library and the kubelet that is not configured to
                # the work folder is a tmpfs of this mount namespace: nothing is written on the machine
                "mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /var/lib && mount -t tmpfs tmpfs /var/log",
                f"{shlex.quote(str(tools['containerd']))} --config {shlex.quote(str(conf / 'containerd.toml'))}"
                f" >{shlex.quote(str(self.workdir / 'containerd.log'))} 2>&1 &",
                f"i=0; while [ ! -S {shlex.quote(str(self.socket))} ]; do i=$((i+1)); [ $i -lt 600 ] || exit 3; sleep 0.1; done",
                *(f"{ctr} image import {shlex.quote(str(image))} >/dev/null" for image in node_images()),
                f"{shlex.join(kubelet_argv)} >{shlex.quote(str(self.workdir / 'kubelet.log'))} 2>&1 &",
                "wait",
            ]
        )
        with (self.workdir / "node.log").open("wb") as out:
            self.proc = subprocess.Popen(
                net.exec_argv(
                    "unshare",
                    "--pid",
                    "--fork",
                    "--kill-child",
                    "--mount",
                    "--propagation",
                    "slave",
                    "--mount-proc",
                    "sh",
                    "-c",
                    script,
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        self.init_pid = wait_for("the node's PID namespace init", self._find_init, 30)
        rest = RestClient(self.cp.api_client())
        wait_for(f"Node {self.name} Ready (kubelet log {self.workdir / 'kubelet.log'})", lambda: self._ready(rest), 180)
        self.start_seconds = time.monotonic() - began

    def _forward_api_server(self, net: NodeNetwork) -> None:
        """The API server's 127.0.0.1 port, reachable at the same address inside the node's namespace."""
        self.forwarder = subprocess.Popen(
            [sys.executable, "-m", "tests.real.nsforward", net.name, str(self.cp.port)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=(self.workdir / "forwarder.log").open("w"),
            text=True,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        assert self.forwarder.stdout is not None
        said = self.forwarder.stdout.readline().strip()
        if said != "listening":
            raise ControlPlaneError(
                f"the API server forwarder into {net.name} did not start: {_tail(self.workdir / 'forwarder.log')}"
            )

    def _find_init(self) -> int | None:
        """The PID 1 of the node's namespace: unshare's child."""
        self._check_alive()
        assert self.proc is not None
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        try:
            pids = children.read_text().split()
        except OSError:
            return None
        return int(pids[0]) if pids else None

    def _check_alive(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise ControlPlaneError(
                f"the node exited with {self.proc.returncode} while starting; {self.workdir / 'node.log'}:\n"
                f"{_tail(self.workdir / 'node.log')}\nkubelet: {_tail(self.workdir / 'kubelet.log')}\n"
                f"containerd: {_tail(self.workdir / 'containerd.log')}"
            )

    def _ready(self, rest: RestClient) -> bool:
        self._check_alive()
        node = rest.get_or_none("v1", "nodes", None, self.name)
        conditions = ((node or {}).get("status") or {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    def exec_argv(self, *argv: str) -> list[str]:
        """``argv`` run in the node's network namespace (where the pod IPs are routed)."""
        assert self.net is not None
        return self.net.exec_argv(*argv)

    def stop(self) -> None:
        """Kill the node's PID namespace (kubelet, containerd, shims, containers), wait until it is gone, remove its
        cgroups, stop the forwarder, delete the network namespace; idempotent."""
        self.containers |= self._container_ids()
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)
            self.proc = None
        if self.init_pid:
            pid = self.init_pid
            wait_for(f"the node's processes gone (init {pid})", lambda: not _namespace_pids(pid), 60)
        if self.forwarder is not None:
            self.forwarder.kill()
            self.forwarder.wait(timeout=30)
            self.forwarder = None
        for controller in _cgroup_controllers():  # containerd's default cgroup: /k8s.io/<container id>
            for container in self.containers:
                _remove_tree(controller / CONTAINERD_CGROUP / container)
        if self.net is not None:
            self.net.delete()

    def _container_ids(self) -> set[str]:
        """The ids of the containers (sandboxes too) containerd has now (none when it is not running)."""
        if self.ctr is None or not self.socket.exists():
            return set()
        done = subprocess.run(
            [str(self.ctr), "--address", str(self.socket), "-n", "k8s.io", "containers", "ls", "-q"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return set(done.stdout.split()) if done.returncode == 0 else set()

    def leftovers(self) -> list[str]:
        """Whatever of the node still exists on the machine: processes, mounts, cgroups, network (empty after stop)."""
        found: list[str] = []
        marker = str(self.workdir)
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmdline and int(proc.name) != os.getpid():
                found.append(f"process {proc.name}: {cmdline[:120]}")
        found += [f"mount {line.split()[4]}" for line in Path("/proc/self/mountinfo").read_text().splitlines() if marker in line]
        found += [
            f"cgroup {c / CONTAINERD_CGROUP / container}"
            for c in _cgroup_controllers()
            for container in self.containers
            if (c / CONTAINERD_CGROUP / container).exists()
        ]
        if self.net is not None:
            found += self.net.leftovers()
        return found


def _cgroup_controllers() -> list[Path]:
    """This machine's cgroup v1 hierarchies (one folder per mounted controller set)."""
    return sorted(p for p in CGROUP_FS.iterdir() if p.is_dir() and not p.is_symlink() and (p / "cgroup.procs").exists())


def _remove_tree(cgroup: Path) -> None:
    """rmdir a cgroup and its children, deepest first (cgroup folders hold only kernel files: rmdir removes them)."""
    if not cgroup.is_dir():
        return
    for child in sorted((p for p in cgroup.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        child.rmdir()
    cgroup.rmdir()


def _namespace_pids(init_pid: int) -> list[int]:
    """Every live process in the PID namespace whose init is ``init_pid`` (none once the namespace is gone)."""
    try:
        ns = os.readlink(f"/proc/{init_pid}/ns/pid")
    except OSError:
        return []
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if os.readlink(proc / "ns" / "pid") == ns:
                    found.append(int(proc.name))
            except OSError:
                continue
    return found
