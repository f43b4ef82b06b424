"""ExecContext: what every action family needs (REST client, events, pod exec, clock) plus shared lookups."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL
from gitops_kd.execute.events import EventRecorder
from gitops_kd.execute.podexec import PodExec
from gitops_kd.kd.layout import API_VERSION, KDCLUSTER_PLURAL
from kubeplumb.rest import RestClient


@dataclass
class ExecContext:
    rest: RestClient
    events: EventRecorder
    pod_exec: PodExec
    now: Callable[[], datetime]

    def cluster(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The live KDCluster, or None."""
        return self.rest.get_or_none(API_VERSION, KDCLUSTER_PLURAL, namespace, name)

    def rollout(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The live KDRollout, or None."""
        return self.rest.get_or_none(ROLLOUT_API_VERSION, ROLLOUT_PLURAL, namespace, name)

    def event_on_cluster(self, namespace: str, name: str, reason: str, message: str, *, warning: bool = False) -> None:
        """An Event on the KDCluster (by reference when it cannot be read)."""
        type_ = "Warning" if warning else "Normal"
        try:
            obj = self.cluster(namespace, name)
        except ApiException:
            obj = None
        if obj is None:
            self.events.record_ref(API_VERSION, "KubeDirectorCluster", namespace, name, reason, message, type_=type_)
        else:
            self.events.record(obj, reason, message, type_=type_)

    def patch_rollout_status(self, namespace: str, name: str, patch: dict[str, Any], *, rv: str | None) -> dict[str, Any]:
        """Merge-patch the KDRollout's status subresource, on condition that the object is still at
        resourceVersion ``rv`` (the one the caller read): a write based on a stale read, such as a deposed
        leader's, fails with 409 Conflict instead of overwriting newer progress."""
        return self.rest.patch(
            ROLLOUT_API_VERSION, ROLLOUT_PLURAL, namespace, name, _guarded("status", patch, rv), subresource="status"
        )

    def patch_rollout_spec(self, namespace: str, name: str, spec: dict[str, Any], *, rv: str | None) -> dict[str, Any]:
        """Merge-patch the KDRollout's spec, on the same resourceVersion condition as patch_rollout_status."""
        return self.rest.patch(ROLLOUT_API_VERSION, ROLLOUT_PLURAL, namespace, name, _guarded("spec", spec, rv))


def _guarded(part: str, patch: dict[str, Any], rv: str | None) -> dict[str, Any]:
    """A merge patch of ``part`` conditional on resourceVersion ``rv`` (None: unconditional)."""
    body: dict[str, Any] = {part: patch}
    if rv:
        body["metadata"] = {"resourceVersion": rv}
    return body


def rv(obj: dict[str, Any]) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion")


def generation(obj: dict[str, Any]) -> int:
    return int((obj.get("metadata") or {}).get("generation") or 0)
