"""Drift policy from Git annotations and filter_plan on real planner output."""

from __future__ import annotations

import pytest
from plan.kdworld import T0, load_text

from gitops_kd.drift import ALERT_ONLY, POLICY_ANNOTATION, REVERT, DriftPolicy, detect, filter_plan
from gitops_kd.plan import PatchServicePorts, PatchTemplate, Plan, RecordUnreachable, Refusal, SetOnDelete, plan
from gitops_kd.spec import KDApp, KDCluster

from .worlds import (
    HELLO1,
    HELLO_DEV,
    NS,
    app_container,
    desired,
    edit_raw,
    edit_service_ports,
    edit_sts,
    edit_template,
    steady,
)


def annotated(obj: KDApp | KDCluster, mode: str) -> KDApp | KDCluster:
    body = obj.body
    body["metadata"].setdefault("annotations", {})[POLICY_ANNOTATION] = mode
    return load_text(obj.source, body)


def drifted(app: KDApp = HELLO1, cl: KDCluster = HELLO_DEV):
    state = edit_template(steady(app, cl), "worker", lambda t: app_container(t).update(image="evil:9"))
    state = edit_sts(state, "controller", update_strategy="RollingUpdate")
    return edit_service_ports(state, "s-kdss-worker-0", [{"name": "http-hello-http", "port": 1}])


def test_default_is_revert_and_keeps_the_reverting_actions() -> None:
    d = desired(HELLO1, HELLO_DEV)
    state = drifted()
    base = plan(d, state, now=T0)
    kinds = {type(a) for a in base.actions}
    assert {PatchTemplate, SetOnDelete, PatchServicePorts} <= kinds
    drifts = detect(d, state)
    policy = DriftPolicy.from_desired(d)
    assert {policy.mode(x) for x in drifts} == {REVERT}
    assert filter_plan(base, drifts, policy) == base


@pytest.mark.parametrize("on", ["cluster", "app"])
def test_alert_only_drops_every_action_of_the_drifted_cluster(on: str) -> None:
    app = annotated(HELLO1, ALERT_ONLY) if on == "app" else HELLO1
    cl = annotated(HELLO_DEV, ALERT_ONLY) if on == "cluster" else HELLO_DEV
    d = desired(app, cl)
    state = drifted(app, cl)
    drifts = detect(d, state)
    policy = DriftPolicy.from_desired(d)
    assert {policy.mode(x) for x in drifts} == {ALERT_ONLY}
    assert {policy.action(x) for x in drifts} == {"alert-only"}
    base = plan(d, state, now=T0)
    assert base.for_cluster(NS, "hello-dev")
    # only the record of what the drift leaves unreachable stays: it reverts nothing
    (record,) = filter_plan(base, drifts, policy).actions
    assert isinstance(record, RecordUnreachable) and [m.pod for m in record.members] == ["kdss-worker-0"]


def test_cluster_annotation_overrides_app_and_global_default() -> None:
    d = desired(annotated(HELLO1, ALERT_ONLY), annotated(HELLO_DEV, REVERT))
    policy = DriftPolicy.from_desired(d, default=ALERT_ONLY)
    drifts = detect(d, drifted(d.apps[(NS, "hello")], d.clusters[(NS, "hello-dev")]))
    assert {x.kind for x in drifts} == {"StatefulSet", "Service"}
    assert {policy.mode(x) for x in drifts} == {REVERT}
    assert DriftPolicy.from_desired(desired(HELLO1, HELLO_DEV), default=ALERT_ONLY).default == ALERT_ONLY


def test_alert_only_app_drift_drops_only_apply_app() -> None:
    d = desired(annotated(HELLO1, ALERT_ONLY), annotated(HELLO_DEV, REVERT))
    state = edit_raw(
        steady(d.apps[(NS, "hello")], d.clusters[(NS, "hello-dev")]),
        lambda r: r["spec"].update(defaultImageRepoTag="other:1"),
        app=True,
    )
    base = plan(d, state, now=T0)
    assert [type(a).__name__ for a in base.actions] == ["ApplyApp"]
    drifts = detect(d, state)
    assert filter_plan(base, drifts, DriftPolicy.from_desired(d)).actions == ()


def test_invalid_annotation_falls_back_and_bad_default_is_refused() -> None:
    d = desired(annotated(HELLO1, "ignore-it"), HELLO_DEV)
    assert DriftPolicy.from_desired(d).apps == {}
    with pytest.raises(ValueError, match="drift policy must be one of revert, alert-only"):
        DriftPolicy.from_desired(d, default="sometimes")


def test_refused_plan_is_untouched() -> None:
    refused = Plan((), (Refusal("apps/hello.yaml", "spec.distroID", "changed"),))
    assert filter_plan(refused, detect(desired(HELLO1, HELLO_DEV), drifted()), DriftPolicy(default=ALERT_ONLY)) is refused
