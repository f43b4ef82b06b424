"""PhaseReport: the rollout phase and condition series of every observed cluster (a cluster gone takes its series
with it) and the pods per recorded stage over them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from gitops_kd.constants import ROLLOUT_PHASES
from gitops_kd.kd.layout import KDCLUSTER_KIND
from gitops_kd.kd.layout import SERVICE_KIND as SERVICE
from gitops_kd.kd.layout import STATEFULSET_KIND as STATEFULSET


@dataclass(frozen=True)
class _Reported:
    """What was reported of one observed cluster model (the collector reuses a model while its objects are
    unchanged, so an unchanged cluster costs one identity check per report)."""

    cluster: Any  # the ObservedCluster it was read from
    phase: str  # the phase series set to 1 ("" or a value outside ROLLOUT_PHASES: none set)
    series: frozenset[tuple[str, str]]  # (kind, name) of the objects whose series it has
    stages: Counter[str]  # its pods per recorded stage


class PhaseReport:
    """Sets gitops_kd rollout phase and stage series from each fleet plan's observed state (``metrics``:
    ControllerMetrics)."""

    def __init__(self, metrics: Any) -> None:
        self._metrics = metrics
        self._reported: dict[tuple[str, str], _Reported] = {}
        self._stages: Counter[str] = Counter()  # the sum of every reported cluster's stages

    def report(self, observed: Any) -> None:
        """Rollout phase series of every cluster; the series of a cluster gone from the cluster (phase and the
        drift series of it and its objects) are removed, not left behind at their last value."""
        if self._metrics is None:
            return
        seen: dict[tuple[str, str], _Reported] = {}
        for key, cluster in observed.clusters.items():
            last = self._reported.get(key)
            seen[key] = last if last is not None and last.cluster is cluster else self._read(key, cluster, last)
        for key in self._reported.keys() - seen.keys():
            gone = self._reported[key]
            self._stages.subtract(gone.stages)
            self._metrics.forget_rollout(*key)
            self._metrics.forget_rollout_conditions(*key)
            for kind, obj in gone.series:
                self._metrics.forget_object(kind, key[0], obj)
        self._reported = seen
        self._metrics.set_rollout_pods(+self._stages)

    def _read(self, key: tuple[str, str], cluster: Any, last: _Reported | None) -> _Reported:
        """Report a cluster seen for the first time or changed since ``last``."""
        rollout = cluster.rollout
        phase = rollout.phase if rollout is not None else ""
        if phase in ROLLOUT_PHASES and (last is None or last.phase != phase):
            self._metrics.set_rollout_phase(key[0], key[1], phase)
        if rollout is not None:  # its kstatus conditions now (a stall by KubeDirector keeps the phase: docs/concepts.md)
            conditions = [
                (str(c.get("type", "")), str(c.get("status", "")), str(c.get("reason", ""))) for c in rollout.conditions
            ]
            self._metrics.set_rollout_conditions(key[0], key[1], [c for c in conditions if c[0]])
        stages = Counter(str(p.stage) for p in rollout.pods.values() if p.stage) if rollout is not None else Counter()
        if last is not None:
            self._stages.subtract(last.stages)
        self._stages.update(stages)
        series = frozenset(
            [(KDCLUSTER_KIND, cluster.name)]
            + [(STATEFULSET, s.name) for s in cluster.statefulsets.values()]
            + [(SERVICE, s.name) for s in cluster.services]
        )
        return _Reported(cluster, phase if phase in ROLLOUT_PHASES else (last.phase if last else ""), series, stages)
