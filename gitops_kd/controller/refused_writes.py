"""RefusedWrites: the objects of the applied commit the API server (or KubeDirector) refuses to write, kept in the
GitOpsKDSource (status.applyRefused: Stalled ApplyRefused) with a Warning Event on it (an object that exists),
counted when it repeats; dropped when the write succeeds or Git no longer asks for it."""

from __future__ import annotations

import threading

from gitops_kd.controller.instance import InstanceRecord
from gitops_kd.execute import Outcome
from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.plan.actions import Action, ApplyApp, ApplyCluster, Plan
from gitops_kd.status.source import APPLY_REFUSED
from kubeplumb.names import WARNING

Write = tuple[str, str, str]  # kind, namespace, name


def _write_of(action: Action) -> Write | None:
    if isinstance(action, ApplyCluster):
        return KDCLUSTER_KIND, action.namespace, action.name
    if isinstance(action, ApplyApp):
        return KDAPP_KIND, action.namespace, action.name
    return None


class RefusedWrites:
    """Listens to each action's outcome (``on_outcome``) and to each fleet plan (``retain``)."""

    def __init__(self, record: InstanceRecord | None) -> None:
        self._record = record
        self._open: dict[Write, str] = {}
        self._lock = threading.Lock()

    def on_outcome(self, action: Action, outcome: Outcome) -> None:
        """A KDApp / KDCluster write refused (the outcome says so) is recorded; one that worked is dropped."""
        write = _write_of(action)
        if write is None or self._record is None:
            return
        if outcome.failed and "refuse" in outcome.message:
            line = f"{write[0]} {write[1]}/{write[2]}: {outcome.message}"
            with self._lock:
                changed = self._open.get(write) != line
                self._open[write] = line
            self._record.event(APPLY_REFUSED, f"not applied: {line}", type_=WARNING)
            if changed:
                self._flush()
        elif not outcome.failed:
            with self._lock:
                gone = self._open.pop(write, None)
            if gone is not None:
                self._flush()

    def retain(self, plan: Plan) -> None:
        """Forget the refused writes the plan no longer has (Git changed them, or they were made another way)."""
        wanted = {w for a in plan.actions if (w := _write_of(a)) is not None}
        with self._lock:
            stale = [w for w in self._open if w not in wanted]
            for w in stale:
                del self._open[w]
        if stale:
            self._flush()

    def lines(self) -> list[str]:
        with self._lock:
            return [self._open[w] for w in sorted(self._open)]

    def _flush(self) -> None:
        if self._record is not None:
            self._record.update(apply_refused="\n".join(self.lines()))


__all__ = ["RefusedWrites"]
