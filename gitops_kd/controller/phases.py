"""PhaseReport: the rollout phase series of every observed cluster (a cluster gone takes its series with it) and
the pods per recorded stage over them."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gitops_kd.constants import ROLLOUT_PHASES
from gitops_kd.kd.layout import KDCLUSTER_KIND
from gitops_kd.kd.layout import SERVICE_KIND as SERVICE
from gitops_kd.kd.layout import STATEFULSET_KIND as STATEFULSET


class PhaseReport:
    """Sets gitops_kd rollout phase and stage series from each fleet plan's observed state (``metrics``:
    ControllerMetrics)."""

    def __init__(self, metrics: Any) -> None:
        self._metrics = metrics
        self._reported: dict[tuple[str, str], frozenset[tuple[str, str]]] = {}  # metric series per cluster

    def report(self, observed: Any) -> None:
        """Rollout phase series of every cluster; the series of a cluster gone from the cluster (phase and the
        drift series of it and its objects) are removed, not left behind at their last value."""
        if self._metrics is None:
            return
        seen: dict[tuple[str, str], frozenset[tuple[str, str]]] = {}
        stages: Counter[str] = Counter()
        for (namespace, name), cluster in observed.clusters.items():
            phase = cluster.rollout.phase if cluster.rollout is not None else ""
            if cluster.rollout is not None:
                stages.update(str(p.stage) for p in cluster.rollout.pods.values() if p.stage)
            if phase in ROLLOUT_PHASES:
                self._metrics.set_rollout_phase(namespace, name, phase)
            seen[(namespace, name)] = frozenset(
                [(KDCLUSTER_KIND, name)]
                + [(STATEFULSET, s.name) for s in cluster.statefulsets.values()]
                + [(SERVICE, s.name) for s in cluster.services]
            )
        self._metrics.set_rollout_pods(stages)
        for namespace, name in self._reported.keys() - seen.keys():
            self._metrics.forget_rollout(namespace, name)
            for kind, obj in self._reported[(namespace, name)]:
                self._metrics.forget_object(kind, namespace, obj)
        self._reported = seen
