"""Traffic to every member while a rollout runs: a client inside the real node's network namespace keeps calling
each member at its pod IP and its member Service's targetPort (what a ClusterIP would route to), and records,
per member, the windows in which it did not answer; and each member's own pod replacement (old pod deleted ->
new pod Ready), so a test can say whether a member was unreachable outside its own replacement."""

from __future__ import annotations

import ctypes
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from gitops_kd.testing import pod_ready
from kubeplumb.rest import RestClient
from tests.e2e.harness import CLUSTER_LABEL

CLONE_NEWNET = 0x40000000  # linux/sched.h
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"  # KubeDirector's member Service selects its pod by it
PERIOD = 0.1  # seconds between two rounds of calls
CALL_TIMEOUT = 0.5


@dataclass
class Member:
    """One member's record: its target now, and what was seen."""

    target: tuple[str, int] | None = None  # (pod IP, targetPort) while its pod is Ready with an IP
    down_since: float | None = None
    windows: list[tuple[float, float]] = field(default_factory=list)  # (first failed call, next answered call)
    replaced: list[tuple[float, float]] = field(default_factory=list)  # (old pod deleting/gone, new pod Ready)
    replacing_since: float | None = None
    pod_uid: str = ""
    answered: int = 0


def call(target: tuple[str, int]) -> bool:
    """An HTTP GET / to ``target`` answered with status 200."""
    try:
        with socket.create_connection(target, timeout=CALL_TIMEOUT) as sock:
            sock.settimeout(CALL_TIMEOUT)
            sock.sendall(b"GET / HTTP/1.0\r\nHost: member\r\n\r\n")
            return sock.recv(64).split(b" ", 2)[1:2] == [b"200"]
    except (OSError, IndexError):
        return False


class TrafficProbe:
    """`with TrafficProbe(rest, ns, cluster, netns_path) as probe:` calls every member of ``cluster`` that has a
    member Service with a port, until the context ends; then ``probe.members`` holds what was seen."""

    def __init__(self, rest: RestClient, ns: str, cluster: str, netns_path: str) -> None:
        self.rest, self.ns, self.cluster, self.netns_path = rest, ns, cluster, netns_path
        self.members: dict[str, Member] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._observe, daemon=True), threading.Thread(target=self._call, daemon=True)]
        self.errors: list[str] = []

    def __enter__(self) -> TrafficProbe:
        self._targets_once()
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        end = time.monotonic()
        with self._lock:
            for member in self.members.values():
                if member.down_since is not None:
                    member.windows.append((member.down_since, end))
                    member.down_since = None

    def longest_window(self, name: str) -> float:
        """The longest time ``name`` did not answer, in seconds."""
        return max((end - start for start, end in self.members[name].windows), default=0.0)

    def outside_replacement(self, name: str, slack: float = 1.0) -> list[tuple[float, float]]:
        """The windows of ``name`` not within one of its own replacements (widened by ``slack`` seconds)."""
        member = self.members[name]
        spans = [*member.replaced, *([(member.replacing_since, float("inf"))] if member.replacing_since else [])]
        return [(s, e) for s, e in member.windows if not any(rs - slack <= s and e <= re + slack for rs, re in spans)]

    def _observe(self) -> None:
        while not self._stop.wait(PERIOD):
            try:
                self._targets_once()
            except Exception as exc:  # the API server briefly unavailable: the next round reads again
                self.errors.append(repr(exc))

    def _targets_once(self) -> None:
        """Read the members' pods and Services; note each pod replacement's start and end."""
        selector = f"{CLUSTER_LABEL}={self.cluster}"
        pods = {p["metadata"]["name"]: p for p in self.rest.list("v1", "pods", self.ns, label_selector=selector)["items"]}
        services = self.rest.list("v1", "services", self.ns, label_selector=selector)["items"]
        now = time.monotonic()
        with self._lock:
            for svc in services:
                ports = (svc.get("spec") or {}).get("ports") or []
                name = ((svc.get("spec") or {}).get("selector") or {}).get(POD_NAME_LABEL)  # a member Service
                if not name or not ports or name not in pods and name not in self.members:
                    continue
                member = self.members.setdefault(name, Member())
                pod = pods.get(name)
                self._note_replacement(member, pod, now)
                ip = ((pod or {}).get("status") or {}).get("podIP")
                target_port = _target_port(ports[0], pod)
                member.target = (ip, target_port) if ip and target_port and pod_ready(pod) else None

    @staticmethod
    def _note_replacement(member: Member, pod: dict[str, Any] | None, now: float) -> None:
        uid = (pod or {}).get("metadata", {}).get("uid", "")
        going = pod is None or bool(pod["metadata"].get("deletionTimestamp")) or (uid != member.pod_uid and member.pod_uid)
        if member.replacing_since is None and going and member.pod_uid:
            member.replacing_since = now
        if member.replacing_since is not None and pod is not None and uid != member.pod_uid and pod_ready(pod):
            member.replaced.append((member.replacing_since, now))
            member.replacing_since = None
        if (
            pod is not None
            and not pod["metadata"].get("deletionTimestamp")
            and (not member.pod_uid or member.replacing_since is None)
        ):
            member.pod_uid = uid

    def _call(self) -> None:
        fd = os.open(self.netns_path, os.O_RDONLY)
        try:
            if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:  # this thread only
                self.errors.append(f"setns {self.netns_path}: {os.strerror(ctypes.get_errno())}")
                return
        finally:
            os.close(fd)
        while not self._stop.wait(PERIOD):
            with self._lock:
                targets = {name: m.target for name, m in self.members.items()}
            for name, target in targets.items():
                ok = target is not None and call(target)
                at = time.monotonic()
                with self._lock:
                    member = self.members[name]
                    if ok:
                        member.answered += 1
                        if member.down_since is not None:
                            member.windows.append((member.down_since, at))
                            member.down_since = None
                    elif member.down_since is None:
                        member.down_since = at


def _target_port(port: dict[str, Any], pod: dict[str, Any] | None) -> int | None:
    """A Service port's targetPort as a number (a named one looked up in the pod's container ports)."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in ((pod or {}).get("spec") or {}).get("containers") or []:
        for declared in container.get("ports") or []:
            if declared.get("name") == target:
                return int(declared["containerPort"])
    return None
