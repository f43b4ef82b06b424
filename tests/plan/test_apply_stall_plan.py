"""plan() of a cluster whose KDRollout is stalled by a KDApp / KDCluster write that kept failing (ApplyRefused /
ApplyFailed, status.applyFailure): the write is retried, the stall lifted once Git no longer asks for it."""

from __future__ import annotations

from typing import Any

import yaml

from gitops_kd.constants import APPLY_FAILURE_FIELD
from gitops_kd.plan import actions as A
from gitops_kd.plan import plan
from plan.kdworld import HELLO1, HELLO2, HELLO_DEV, NS, REPO, T0, desired, live_cluster, load_text, observed, with_rollout

KEY = (NS, "hello-dev")
LABELLED = load_text(
    "clusters/hello-dev.yaml",
    {
        **(doc := yaml.safe_load((REPO / "clusters/hello-dev.yaml").read_text())),
        "metadata": {**doc["metadata"], "labels": {**doc["metadata"]["labels"], "team": "blue"}},
    },
)


def stalled_by(kind: str, name: str, reason: str = "ApplyFailed", phase: str = "Idle", target: str = "1.0.0") -> Any:
    """hello-dev at 1.0.0, its rollout (towards ``target``) Stalled by the write of ``kind`` ``name`` (failed five
    times) while it was ``phase``."""
    record = {
        "kind": kind,
        "namespace": NS,
        "name": name,
        "digest": "d1",
        "failures": 5,
        "code": 500,
        "message": "boom",
        "phase": phase,
    }
    stalled = [
        {"type": "Ready", "status": "False", "reason": reason, "message": "m"},
        {"type": "Stalled", "status": "True", "reason": reason, "message": "m"},
    ]
    live = with_rollout(
        live_cluster(HELLO1, HELLO_DEV),
        phase="Stalled",
        stalled_reason=reason,
        target_version=target,
        conditions=tuple(stalled),
        raw={"status": {"phase": "Stalled", "stalledReason": reason, APPLY_FAILURE_FIELD: record}},
    )
    return observed((HELLO1,), (live,))


def test_the_failing_write_is_planned_again_and_nothing_else_while_git_asks_for_it() -> None:
    p = plan(desired(HELLO1, LABELLED, commit="c2"), stalled_by("KubeDirectorCluster", "hello-dev"), now=T0)
    assert [type(a).__name__ for a in p.actions] == ["ApplyCluster"], p.describe()
    apply = p.actions[0]
    assert isinstance(apply, A.ApplyCluster) and apply.counted  # its success drops the count


def test_a_new_commit_retries_the_write_not_the_attempt() -> None:
    """An apply stall is not a stalled attempt: a newer commit starts no EnsureRollout (no resumed attempt)."""
    p = plan(desired(HELLO1, LABELLED, commit="c9"), stalled_by("KubeDirectorCluster", "hello-dev"), now=T0)
    assert not any(isinstance(a, (A.EnsureRollout, A.HandleFailure)) for a in p.actions), p.describe()


def test_the_stall_is_lifted_when_git_no_longer_asks_for_the_write() -> None:
    p = plan(desired(HELLO1, HELLO_DEV, commit="c3"), stalled_by("KubeDirectorCluster", "hello-dev"), now=T0)
    assert [type(a).__name__ for a in p.actions] == ["LiftStall"], p.describe()
    lift = p.actions[0]
    assert isinstance(lift, A.LiftStall) and "KubeDirectorCluster default/hello-dev" in lift.message


def test_an_app_write_no_cluster_uses_is_planned() -> None:
    unused = observed((HELLO1,), ())  # no cluster uses the app: KubeDirector admits the write
    p = plan(desired(HELLO2, commit="c2"), unused, now=T0)
    assert [type(a).__name__ for a in p.actions] == ["ApplyApp"], p.describe()


def test_an_app_write_stall_of_a_kdapp_kubedirector_holds_is_lifted() -> None:
    """Invariant (stock KubeDirector): a rollout stalled ApplyRefused by the KDApp write an older gitops-kd made
    while clusters use the app is lifted, the KDApp is not written again, and the upgrade goes on at the
    StatefulSet level (docs/design/stock-kubedirector.md)."""
    state = stalled_by("KubeDirectorApp", "hello", reason="ApplyRefused", phase="Upgrading", target="2.0.0")
    p = plan(desired(HELLO2, HELLO_DEV, commit="c2"), state, now=T0)
    assert [type(a).__name__ for a in p.actions] == ["LiftStall"], p.describe()
    assert "KubeDirector holds the KDApp" in p.actions[0].message
    assert any("held at 1.0.0 by KubeDirector" in note for note in p.kept), p.kept


def test_idle_and_reconciling_after_a_lifted_stall_becomes_ready_once_steady() -> None:
    reconciling = (
        {"type": "Ready", "status": "False", "reason": "Retrying", "message": "m"},
        {"type": "Reconciling", "status": "True", "reason": "Retrying", "message": "m"},
    )
    live = with_rollout(live_cluster(HELLO1, HELLO_DEV), conditions=reconciling)
    p = plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (live,)), now=T0)
    assert [type(a).__name__ for a in p.actions] == ["FinishRollout"], p.describe()
    ready = with_rollout(
        live_cluster(HELLO1, HELLO_DEV), conditions=({"type": "Ready", "status": "True", "reason": "UpToDate", "message": "m"},)
    )
    assert plan(desired(HELLO1, HELLO_DEV), observed((HELLO1,), (ready,)), now=T0).empty


def test_an_app_write_stall_ends_when_git_goes_back_to_the_live_app() -> None:
    """A revert of the refused app: no app write left, the rollout goes back to the version the pods run (the
    attempt's write drops status.applyFailure)."""
    state = stalled_by("KubeDirectorApp", "hello", reason="ApplyRefused", phase="Upgrading", target="2.0.0")
    p = plan(desired(HELLO1, HELLO_DEV, commit="c3"), state, now=T0)
    assert not any(isinstance(a, A.ApplyApp) for a in p.actions), p.describe()
    ensure = p.next()
    assert isinstance(ensure, A.EnsureRollout) and ensure.target_version == "1.0.0", p.describe()
