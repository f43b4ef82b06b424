"""ClearBreakGlass: remove a break-glass annotation left on a managed object (one write guarded by resourceVersion)."""

from __future__ import annotations

import logging

from gitops_kd.constants import BREAK_GLASS_ANNOTATION
from gitops_kd.drift.model import API_VERSIONS
from gitops_kd.execute.context import ExecContext, rv
from gitops_kd.execute.outcome import Outcome
from gitops_kd.kd.layout import KDCLUSTER_KIND, KDCLUSTER_PLURAL
from gitops_kd.kd.layout import SERVICE_KIND as SERVICE
from gitops_kd.kd.layout import STATEFULSET_KIND as STATEFULSET
from gitops_kd.observe.collector import Expectation
from gitops_kd.plan.actions import ClearBreakGlass
from gitops_kd.status import events as ev
from kubeplumb.names import WARNING

log = logging.getLogger(__name__)

PLURALS = {KDCLUSTER_KIND: KDCLUSTER_PLURAL, STATEFULSET: "statefulsets", SERVICE: "services"}


def clear_break_glass(ctx: ExecContext, a: ClearBreakGlass) -> Outcome:
    """Idempotent: nothing is written when the annotation is gone; the patch applies only to the version read
    (an edit in between makes it 409, and the next round looks again)."""
    api, plural = API_VERSIONS[a.kind], PLURALS[a.kind]
    obj = ctx.rest.get_or_none(api, plural, a.namespace, a.name)
    reason = (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(BREAK_GLASS_ANNOTATION)
    if obj is None or reason is None:
        return Outcome(a.describe(), False, "no break-glass annotation")
    patched = ctx.rest.patch(
        api,
        plural,
        a.namespace,
        a.name,
        {"metadata": {"annotations": {BREAK_GLASS_ANNOTATION: None}, "resourceVersion": rv(obj)}},
    )
    message = (
        f"break-glass annotation {BREAK_GLASS_ANNOTATION}={reason!r} removed from {a.kind} {a.namespace}/"
        f"{a.name}: a break-glass counts for the request that set it (audited then), it is no standing "
        "marker"
    )
    log.warning("%s", message)
    ctx.events.record(patched, ev.BREAK_GLASS_CLEARED, message, type_=WARNING)
    return Outcome(
        a.describe(), True, "break-glass annotation removed", expect=(Expectation(plural, a.namespace, a.name, rv(patched)),)
    )
