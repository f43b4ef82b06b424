"""Planning: the pure planner then each post-plan stage, serialized, on the desired state restricted to the scope."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from gitops_kd.controller.scope import Scope, Scoped, restrict
from gitops_kd.controller.stages import Planner, PlanStage
from gitops_kd.plan.result import Plan
from gitops_kd.spec.state import DesiredState

log = logging.getLogger(__name__)

SCOPED_KEPT = 4  # desired states kept restricted to the scope (by commit)


class Planning:
    """``plan`` runs ``planner`` then ``stages``; callers hold ``lock`` around it (a stage keeps state, and the
    fleet reconcile's choice of commit plans twice under one hold)."""

    def __init__(self, planner: Planner, stages: Sequence[PlanStage], scope: Scope, now: Callable[[], datetime]) -> None:
        self.lock = threading.Lock()
        self.scope = scope
        self._planner, self._stages, self._now = planner, tuple(stages), now
        self._scoped: dict[str, tuple[DesiredState, Scoped]] = {}  # by commit: desired, restricted to the scope
        self._scope_logged: set[str] = set()  # commits whose out-of-scope objects were logged

    def plan(self, desired: DesiredState, observed: Any, *, partial: bool = False) -> Plan:
        """The plan of ``desired`` (already in scope); the planner is called with ``partial=True`` only for a part,
        so a planner that plans only whole fleets can be given in fleet mode."""
        now = self._now()
        made = self._planner(desired, observed, now=now, partial=True) if partial else self._planner(desired, observed, now=now)
        for stage in self._stages:
            made = stage(desired, observed, made, partial=partial)
        return made

    def fleet(self, desired: DesiredState, observed: Any) -> Plan:
        """The whole fleet's plan of ``desired``, restricted to the scope."""
        scoped = self.in_scope(desired)
        return scoped.restrict_plan(self.plan(scoped.desired, observed))

    def in_scope(self, desired: DesiredState) -> Scoped:
        """`desired` restricted to the scope (cached per desired state); its skipped objects logged once per commit."""
        cached = self._scoped.get(desired.commit)
        if cached is not None and cached[0] is desired:
            return cached[1]
        scoped = restrict(desired, self.scope)
        if len(self._scoped) >= SCOPED_KEPT:
            self._scoped.clear()
        self._scoped[desired.commit] = (desired, scoped)
        if desired.commit not in self._scope_logged and (line := scoped.log_line()) is not None:
            self._scope_logged.add(desired.commit)
            log.warning("%s", line)
        return scoped
