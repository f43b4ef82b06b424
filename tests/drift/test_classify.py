"""classify, the pure drift stage: baselines in and out as data, transitions, alert-only filtering."""

from __future__ import annotations

from plan.kdworld import T0, load_text

from gitops_kd.drift import ALERT_ONLY, POLICY_ANNOTATION
from gitops_kd.drift.classify import Baselines, classify
from gitops_kd.plan import PatchTemplate, RecordInSync
from gitops_kd.plan.planner import plan

from .worlds import HELLO1, HELLO_DEV, NS, app_container, desired, edit_template, steady

KEY = (NS, "hello-dev")


def test_classify_baseline_then_new_ongoing_resolved_without_touching_its_input() -> None:
    """Invariant: a Git change is never drift, an edit after the cluster was seen in sync is, once per occurrence;
    classify never mutates the baselines it is given (they come back as a new value)."""
    d = desired(HELLO1, HELLO_DEV, commit="c1")
    drifted = edit_template(steady(), "worker", lambda t: app_container(t).update(image="evil:9"))
    empty = Baselines()
    out, report = classify(plan(d, drifted, now=T0), drifted, empty, desired=d, now=T0)
    assert report.drifts == () and report.baselines.clusters == {} and empty == Baselines()  # convergence
    assert any(isinstance(a, PatchTemplate) for a in out.actions)

    out, report = classify(plan(d, steady(), now=T0), steady(), empty, desired=d, now=T0)
    synced = report.baselines
    assert synced.clusters == {KEY: "c1"} and synced.apps == {(NS, "hello"): "c1"} and empty == Baselines()
    assert [type(a) for a in out.actions] == [RecordInSync]  # the baseline recorded on the KDRollout

    _, first = classify(plan(d, drifted, now=T0), drifted, synced, desired=d, now=T0)
    assert [o.drift.name for o in first.new] == ["kdss-worker"] and not first.ongoing and not first.resolved
    assert dict(synced.open) == {}  # the input is left as it was
    _, again = classify(plan(d, drifted, now=T0), drifted, first.baselines, desired=d, now=T0)
    assert not again.new and [o.drift.name for o in again.ongoing] == ["kdss-worker"]
    _, back = classify(plan(d, steady(), now=T0), steady(), again.baselines, desired=d, now=T0)
    assert [o.drift.name for o in back.resolved] == ["kdss-worker"] and dict(back.baselines.open) == {}


def test_classify_alert_only_removes_the_reverting_actions_and_keeps_reporting() -> None:
    """Invariant: an alert-only object's drift is reported but never reverted (its actions leave the plan)."""
    body = HELLO_DEV.body
    body["metadata"]["annotations"] = {POLICY_ANNOTATION: ALERT_ONLY}
    cl = load_text(HELLO_DEV.source, body)
    d = desired(HELLO1, cl, commit="c1")
    _, synced = classify(plan(d, steady(HELLO1, cl), now=T0), steady(HELLO1, cl), Baselines(), desired=d, now=T0)
    drifted = edit_template(steady(HELLO1, cl), "worker", lambda t: app_container(t).update(image="evil:9"))
    base = plan(d, drifted, now=T0)
    assert any(isinstance(a, PatchTemplate) for a in base.actions)
    out, report = classify(base, drifted, synced.baselines, desired=d, now=T0)
    assert not any(isinstance(a, PatchTemplate) for a in out.actions)
    assert report.policy.action(report.new[0].drift) == "alert-only"
