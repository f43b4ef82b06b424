"""A rough upper bound of a rollout's duration, from the stanza's timeouts and the pods replaced (pure)."""

from __future__ import annotations

from collections.abc import Iterable

from gitops_kd.review.model import ClusterReview


def cluster_seconds(cluster: ClusterReview) -> int:
    """The upper bound for one cluster: per replaced pod, podReadyTimeoutSeconds plus (upgrades) each migrate
    command's timeout, the hook's and the gate's; every step usually ends long before its timeout."""
    ready = cluster.pod_ready_timeout_seconds or 0
    total = 0
    for role in cluster.roles:
        per_pod = ready + sum(d.timeout_seconds or 0 for d in role.dirs if d.action == "migrate")
        if role.hook and cluster.hook is not None:
            per_pod += cluster.hook.timeout_seconds
        if role.gate and cluster.gate is not None:
            per_pod += cluster.gate.timeout_seconds
        total += role.replaced * per_pod
    return total


def total_seconds(clusters: Iterable[ClusterReview], wave_soak_seconds: float = 0.0) -> int:
    """The upper bound for everything: per app, its waves one after the other (the longest cluster of each,
    plus the soak between them); apps in parallel, so the longest app."""
    waves: dict[str, dict[int, int]] = {}
    for c in clusters:
        if c.estimate_seconds:
            per_app = waves.setdefault(c.app, {})
            per_app[c.wave] = max(per_app.get(c.wave, 0), c.estimate_seconds)
    per_app_totals = [sum(w.values()) + int(wave_soak_seconds) * (len(w) - 1) for w in waves.values()]
    return max(per_app_totals, default=0)
