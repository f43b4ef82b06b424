"""RestoreLabels: put KubeDirector's labels back on a role StatefulSet (one merge patch guarded by resourceVersion)."""

from __future__ import annotations

from gitops_kd.execute.context import ExecContext, rv
from gitops_kd.execute.outcome import Outcome
from gitops_kd.observe.collector import Expectation
from gitops_kd.plan.actions import RestoreLabels
from gitops_kd.status import events as ev
from kubeplumb.names import WARNING


def restore_labels(ctx: ExecContext, a: RestoreLabels) -> Outcome:
    """Idempotent: nothing is written when the labels are there; the patch applies only to the version read (a
    concurrent change makes it 409, retried on the next round)."""
    sts = ctx.rest.get_or_none("apps/v1", "statefulsets", a.namespace, a.statefulset)
    if sts is None:
        return Outcome(a.describe(), False, "StatefulSet gone")
    have = (sts.get("metadata") or {}).get("labels") or {}
    if all(have.get(k) == v for k, v in a.labels):
        return Outcome(a.describe(), False, "labels already there")
    patched = ctx.rest.patch(
        "apps/v1",
        "statefulsets",
        a.namespace,
        a.statefulset,
        {"metadata": {"labels": dict(a.labels), "resourceVersion": rv(sts)}},
    )
    was = ", ".join(f"{k}={have.get(k)!r}" for k, _ in a.labels)
    ctx.events.record(
        patched,
        ev.LABELS_RESTORED,
        f"KubeDirector's labels put back ({was} -> {', '.join(f'{k}={v}' for k, v in a.labels)}): "
        f"they were removed or changed out of band on this StatefulSet of cluster {a.cluster}, "
        f"role {a.role}",
        type_=WARNING,
    )
    return Outcome(
        a.describe(), True, "labels restored", expect=(Expectation("statefulsets", a.namespace, a.statefulset, rv(patched)),)
    )
