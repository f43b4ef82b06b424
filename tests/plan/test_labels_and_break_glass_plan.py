"""plan() puts back KubeDirector's labels removed from a role StatefulSet (RestoreLabels) and removes a break-glass
annotation left on a managed object (ClearBreakGlass), nothing else changing (pure)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gitops_kd.constants import BREAK_GLASS_ANNOTATION
from gitops_kd.kd.layout import CLUSTER_LABEL, KDCLUSTER_KIND, ROLE_LABEL, SERVICE_KIND, STATEFULSET_KIND
from gitops_kd.observed import ObservedCluster
from gitops_kd.plan import actions as A
from gitops_kd.plan import plan
from gitops_kd.review.livediff import live_diff
from plan.kdworld import HELLO1, HELLO_DEV, T0, desired, live_cluster, observed, with_rollout

READY = ({"type": "Ready", "status": "True", "reason": "UpToDate", "message": "m"},)


def _steady() -> ObservedCluster:
    return with_rollout(live_cluster(HELLO1, HELLO_DEV), conditions=READY)


def _with_sts_meta(c: ObservedCluster, role: str, meta: dict[str, Any]) -> ObservedCluster:
    sts = c.statefulsets[role]
    return replace(c, statefulsets={**c.statefulsets, role: replace(sts, raw={"metadata": meta})})


def test_a_role_statefulset_without_its_kubedirector_labels_gets_them_back_and_nothing_else() -> None:
    """Invariant (issue 28, 4): KubeDirector's kdcluster and role labels on a role StatefulSet are owned: one that
    lost or changed them (still the cluster's by ownerReference) gets exactly a RestoreLabels of those labels, which
    `gitops-kd diff` shows field by field; one that has them gets nothing."""
    labelled = _with_sts_meta(_steady(), "worker", {"labels": {CLUSTER_LABEL: "hello-dev", ROLE_LABEL: "worker"}})
    assert plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (labelled,)), now=T0).actions == ()
    stripped = _with_sts_meta(_steady(), "worker", {"labels": {ROLE_LABEL: "controller"}})
    state = observed((HELLO1,), (stripped,))
    p = plan(desired(HELLO1, HELLO_DEV), state, now=T0)
    sts = stripped.statefulsets["worker"].name
    assert p.actions == (
        A.RestoreLabels("default", sts, "worker", ((CLUSTER_LABEL, "hello-dev"), (ROLE_LABEL, "worker")), "hello-dev"),
    )
    [shown] = live_diff(p.actions, state)
    assert [f.describe() for f in shown.fields] == [
        f'metadata.labels[{CLUSTER_LABEL}]: (absent) -> "hello-dev"',
        f'metadata.labels[{ROLE_LABEL}]: "controller" -> "worker"',
    ]


def test_a_break_glass_annotation_left_on_a_managed_object_is_removed() -> None:
    """Invariant (issue 28, 5): a break-glass annotation is never a standing marker: one ClearBreakGlass per managed
    object carrying it (KDCluster, role StatefulSet, member Service), none for a suspended cluster (no action)."""
    c = _steady()
    glass = {BREAK_GLASS_ANNOTATION: "INC-9"}
    meta = c.raw["metadata"]
    c = replace(c, raw={**c.raw, "metadata": {**meta, "annotations": {**meta.get("annotations", {}), **glass}}})
    c = _with_sts_meta(c, "worker", {"labels": {CLUSTER_LABEL: "hello-dev", ROLE_LABEL: "worker"}, "annotations": glass})
    svc = c.member_services()[0]
    c = replace(
        c, services=tuple(replace(s, raw={**s.raw, "metadata": {"annotations": glass}}) if s == svc else s for s in c.services)
    )
    p = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (c,)), now=T0)
    assert p.actions == (
        A.ClearBreakGlass("default", KDCLUSTER_KIND, "hello-dev", "INC-9", "hello-dev"),
        A.ClearBreakGlass("default", STATEFULSET_KIND, c.statefulsets["worker"].name, "INC-9", "hello-dev"),
        A.ClearBreakGlass("default", SERVICE_KIND, svc.name, "INC-9", "hello-dev"),
    ), p.describe()
    held = with_rollout(c, raw={"spec": {"suspend": True}})
    assert not any(
        isinstance(a, A.ClearBreakGlass) for a in plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (held,)), now=T0).actions
    )
