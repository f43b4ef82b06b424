"""StatefulSet health: kubectl's rollout-status rules with gitops-engine's messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.health._fields import being_deleted, integer, section, text
from gitops_kd.health.model import Health, HealthStatus

PENDING_DELETION = Health(HealthStatus.PROGRESSING, "Pending deletion")

ON_DELETE_WAITING = " (OnDelete)..."  # ends the message of OnDelete pods not replaced yet


def statefulset_health(obj: Mapping[str, Any]) -> Health:
    """Health of an apps/v1 StatefulSet.

    In order: spec not yet observed (observedGeneration 0 or behind metadata.generation) → Progressing;
    fewer ready pods than spec.replicas (default 1) → Progressing; RollingUpdate with a partition → Progressing
    until updatedReplicas reaches replicas - partition, then Healthy; OnDelete → Healthy once every pod is at
    the update revision (updatedReplicas >= replicas; gitops-engine calls OnDelete Healthy at once, but
    gitops-kd upgrades through OnDelete, so a pod still waiting to be replaced is Progressing — the
    StatefulSet controller never moves currentRevision under OnDelete, so revisions cannot tell);
    otherwise Progressing while updateRevision differs from currentRevision, then Healthy.
    """
    if being_deleted(obj):
        return PENDING_DELETION
    spec, status = section(obj, "spec"), section(obj, "status")
    generation = integer(section(obj, "metadata"), "generation")
    observed = integer(status, "observedGeneration")
    if observed == 0 or generation > observed:
        return Health(HealthStatus.PROGRESSING, "Waiting for statefulset spec update to be observed...")
    replicas = integer(spec, "replicas", 1)
    ready = integer(status, "readyReplicas")
    updated = integer(status, "updatedReplicas")
    if ready < replicas:
        return Health(HealthStatus.PROGRESSING, f"Waiting for {replicas - ready} pods to be ready...")
    strategy = section(spec, "updateStrategy")
    kind = text(strategy, "type") or "RollingUpdate"
    rolling = strategy.get("rollingUpdate")
    if kind == "RollingUpdate" and isinstance(rolling, Mapping):
        if rolling.get("partition") is not None:
            wanted = replicas - integer(rolling, "partition")
            if updated < wanted:
                return Health(
                    HealthStatus.PROGRESSING,
                    f"Waiting for partitioned roll out to finish: {updated} out of {wanted} new pods have been updated...",
                )
        return Health(HealthStatus.HEALTHY, f"partitioned roll out complete: {updated} new pods have been updated...")
    if kind == "OnDelete":
        if updated < replicas:
            return Health(
                HealthStatus.PROGRESSING,
                f"Waiting for {replicas - updated} pods to be replaced at revision "
                f"{text(status, 'updateRevision')}{ON_DELETE_WAITING}",
            )
        return Health(HealthStatus.HEALTHY, f"statefulset has {ready} ready pods")
    update_revision, current_revision = text(status, "updateRevision"), text(status, "currentRevision")
    if update_revision != current_revision:
        return Health(
            HealthStatus.PROGRESSING,
            f"waiting for statefulset rolling update to complete {updated} pods at revision {update_revision}...",
        )
    return Health(
        HealthStatus.HEALTHY,
        f"statefulset rolling update complete {integer(status, 'currentReplicas')} pods at revision {current_revision}...",
    )
