"""Pure pod-status rendering: container states, conditions with stable lastTransitionTime, phase."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class ContainerRun:
    """What the node knows about one container (mutable: the kubelet updates it as things happen)."""

    name: str
    image: str
    image_id: str
    state: str = "waiting"  # waiting | running | terminated
    reason: str = "ContainerCreating"
    message: str = ""
    exit_code: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    ready: bool = False
    restart_count: int = 0
    last_state: dict[str, Any] = field(default_factory=dict)
    attempt_id: int = 0
    instance: str = field(default_factory=lambda: uuid.uuid4().hex)  # tells re-created pods' containers apart

    def terminate(self, exit_code: int, message: str = "") -> None:
        """Record that the current attempt exited."""
        self.state, self.exit_code = "terminated", exit_code
        self.reason = "Completed" if exit_code == 0 else "Error"
        self.message = message
        self.finished_at = now_rfc3339()
        self.ready = False

    def restart_waiting(self, reason: str = "CrashLoopBackOff", message: str = "") -> None:
        """The exited attempt becomes lastState; the container waits (back-off) for its next start."""
        self.last_state = {"terminated": self._terminated()}
        self.restart_count += 1
        self.state, self.reason, self.message, self.exit_code = "waiting", reason, message, None
        self.ready = False

    def run(self) -> None:
        self.state, self.reason, self.message, self.exit_code = "running", "", "", None
        self.started_at = now_rfc3339()
        self.finished_at = None
        self.attempt_id += 1

    def _terminated(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "exitCode": self.exit_code if self.exit_code is not None else 0,
            "reason": self.reason or "Error",
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
            "containerID": self.container_id,
        }
        if self.message:
            out["message"] = self.message
        return out

    @property
    def container_id(self) -> str:
        return (
            "sim://"
            + hashlib.sha256(
                f"{self.instance}/{self.name}/{self.image}/{self.attempt_id}/{self.started_at}".encode()
            ).hexdigest()[:32]
        )

    def to_status(self) -> dict[str, Any]:
        if self.state == "running":
            state: dict[str, Any] = {"running": {"startedAt": self.started_at}}
        elif self.state == "terminated":
            state = {"terminated": self._terminated()}
        else:
            state = {"waiting": {"reason": self.reason, **({"message": self.message} if self.message else {})}}
        out: dict[str, Any] = {
            "name": self.name,
            "image": self.image,
            "imageID": self.image_id if self.started_at else "",
            "ready": self.ready,
            "restartCount": self.restart_count,
            "started": self.state == "running",
            "state": state,
            "lastState": dict(self.last_state),
        }
        if self.started_at:
            out["containerID"] = self.container_id
        return out


def _condition(
    kind: str, ok: bool, previous: Mapping[str, Mapping[str, Any]], now: str, reason: str = "", message: str = ""
) -> dict[str, Any]:
    status = "True" if ok else "False"
    prev = previous.get(kind) or {}
    cond: dict[str, Any] = {
        "type": kind,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": prev.get("lastTransitionTime") if prev.get("status") == status else now,
    }
    if not ok and reason:
        cond["reason"] = reason
        cond["message"] = message
    return cond


def pod_status(
    *,
    phase: str,
    init: Sequence[ContainerRun],
    main: Sequence[ContainerRun],
    pod_ip: str,
    host_ip: str,
    start_time: str,
    previous: Mapping[str, Any] | None,
    now: str | None = None,
    message: str = "",
    reason: str = "",
) -> dict[str, Any]:
    """The status a kubelet reports for the pod's current state."""
    now = now or now_rfc3339()
    prev = {c.get("type"): c for c in ((previous or {}).get("conditions") or [])}
    initialized = all(c.state == "terminated" and c.exit_code == 0 for c in init)
    unready = [c.name for c in main if not c.ready]
    incomplete = [c.name for c in init if not (c.state == "terminated" and c.exit_code == 0)]
    conditions = [
        _condition("PodReadyToStartContainers", True, prev, now),
        _condition(
            "Initialized",
            initialized,
            prev,
            now,
            "ContainersNotInitialized",
            f"containers with incomplete status: [{' '.join(incomplete)}]",
        ),
        _condition(
            "Ready",
            not unready and initialized,
            prev,
            now,
            "ContainersNotReady",
            f"containers with unready status: [{' '.join(unready)}]",
        ),
        _condition(
            "ContainersReady",
            not unready and initialized,
            prev,
            now,
            "ContainersNotReady",
            f"containers with unready status: [{' '.join(unready)}]",
        ),
        _condition("PodScheduled", True, prev, now),
    ]
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": start_time,
        "qosClass": (previous or {}).get("qosClass") or "BestEffort",  # the API server's, set on create
        "containerStatuses": [c.to_status() for c in main],
    }
    if init:
        status["initContainerStatuses"] = [c.to_status() for c in init]
    if message:
        status["message"] = message
    if reason:
        status["reason"] = reason
    return status


def same_status(a: Mapping[str, Any] | None, b: Mapping[str, Any]) -> bool:
    """True when nothing but timestamps-free equality says no update is needed."""
    return dict(a or {}) == dict(b)
