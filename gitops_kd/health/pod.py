"""Pod health: phase, deletion, readiness, and container errors (CrashLoopBackOff, ImagePullBackOff, Init:Error)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.health._fields import being_deleted, condition, integer, items, section, text
from gitops_kd.health.model import Health, HealthStatus

PENDING_DELETION = Health(HealthStatus.PROGRESSING, "Pending deletion")


def _bad_waiting_reason(reason: str) -> bool:
    """gitops-engine's rule: ErrImagePull, CreateContainerConfigError, CrashLoopBackOff, ImagePullBackOff, ..."""
    return reason.startswith("Err") or reason.endswith("Error") or reason.endswith("BackOff")


def _describe(reason: str, name: str, message: str) -> str:
    return f"{reason}: container {name}" + (f": {message}" if message else "")


def _container_errors(status: Mapping[str, Any]) -> list[str]:
    """A message per container that is failing: init containers first (as kubectl's Init:<reason>)."""
    errors: list[str] = []
    for cs in items(status, "initContainerStatuses"):
        state = section(cs, "state")
        waiting, terminated = section(state, "waiting"), section(state, "terminated")
        if waiting and _bad_waiting_reason(text(waiting, "reason")):
            errors.append(_describe("Init:" + text(waiting, "reason"), text(cs, "name"), text(waiting, "message")))
        elif terminated and integer(terminated, "exitCode") != 0:
            reason = "Init:" + (text(terminated, "reason") or "Error")
            detail = f"exit code {integer(terminated, 'exitCode')}"
            if text(terminated, "message"):
                detail += ": " + text(terminated, "message")
            errors.append(_describe(reason, text(cs, "name"), detail))
    for cs in items(status, "containerStatuses"):
        waiting = section(section(cs, "state"), "waiting")
        if waiting and _bad_waiting_reason(text(waiting, "reason")):
            errors.append(_describe(text(waiting, "reason"), text(cs, "name"), text(waiting, "message")))
    return errors


def _fail_message(status: Mapping[str, Any]) -> str:
    """Why a Failed pod failed: the first terminated container's message, OOMKilled or exit code."""
    for cs in [*items(status, "initContainerStatuses"), *items(status, "containerStatuses")]:
        terminated = section(section(cs, "state"), "terminated")
        if not terminated:
            continue
        if text(terminated, "message"):
            return text(terminated, "message")
        if text(terminated, "reason") == "OOMKilled":
            return "OOMKilled"
        if integer(terminated, "exitCode") != 0:
            return f"container {text(cs, 'name')!r} failed with exit code {integer(terminated, 'exitCode')}"
    return ""


def _waiting_message(status: Mapping[str, Any]) -> str:
    """What a Pending pod waits for: status.message, else the first waiting container's reason and message."""
    if text(status, "message"):
        return text(status, "message")
    for cs in [*items(status, "initContainerStatuses"), *items(status, "containerStatuses")]:
        waiting = section(section(cs, "state"), "waiting")
        if waiting:
            return _describe(text(waiting, "reason") or "Waiting", text(cs, "name"), text(waiting, "message"))
    return ""


def _not_ready_message(status: Mapping[str, Any]) -> str:
    ready = condition(status, "Ready") or {}
    parts = [p for p in (text(ready, "reason"), text(ready, "message")) if p]
    return text(status, "message") or ": ".join(parts) or "pod is not ready"


def _restarted_message(cs: Mapping[str, Any]) -> str:
    last = section(section(cs, "lastState"), "terminated")
    message = (
        f"container {text(cs, 'name')} restarted {integer(cs, 'restartCount')} times, last exit code {integer(last, 'exitCode')}"
    )
    if text(last, "reason"):
        message += f" ({text(last, 'reason')})"
    return message


def pod_health(obj: Mapping[str, Any]) -> Health:
    """Health of a v1 Pod (gitops-engine's rules, with the failing container's reason in the message).

    Being deleted → Progressing. With restartPolicy Always (the default): a container (or init container)
    waiting with an Err*/*Error/*BackOff reason, or an init container that exited non-zero → Degraded with
    the reason(s). Then by phase: Pending → Progressing, Succeeded → Healthy, Failed → Degraded; Running:
    Ready → Healthy, not Ready after a container terminated → Degraded, else Progressing (pods of
    restartPolicy OnFailure/Never are Progressing while Running). Anything else → Unknown.
    """
    if being_deleted(obj):
        return PENDING_DELETION
    spec, status = section(obj, "spec"), section(obj, "status")
    policy = text(spec, "restartPolicy") or "Always"
    if policy == "Always":
        errors = _container_errors(status)
        if errors:
            return Health(HealthStatus.DEGRADED, "; ".join(errors))
    phase = text(status, "phase")
    if phase == "Pending" or (not phase and not status):
        return Health(HealthStatus.PROGRESSING, _waiting_message(status) or "Pending")
    if phase == "Succeeded":
        return Health(HealthStatus.HEALTHY, text(status, "message"))
    if phase == "Failed":
        return Health(HealthStatus.DEGRADED, text(status, "message") or _fail_message(status))
    if phase == "Running":
        if policy != "Always":
            return Health(HealthStatus.PROGRESSING, text(status, "message"))
        ready = condition(status, "Ready")
        if ready is not None and ready.get("status") == "True":
            return Health(HealthStatus.HEALTHY, text(status, "message"))
        for cs in items(status, "containerStatuses"):
            if section(section(cs, "lastState"), "terminated"):
                return Health(HealthStatus.DEGRADED, text(status, "message") or _restarted_message(cs))
        return Health(HealthStatus.PROGRESSING, _not_ready_message(status))
    return Health(HealthStatus.UNKNOWN, text(status, "message") or (f"phase {phase}" if phase else ""))
