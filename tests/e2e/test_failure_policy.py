"""failurePolicy: `halt` stops the rollout and names the commit to revert; `revert-commit` pushes the revert
to Git itself and the cluster is downgraded back through the normal pipeline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import E2E, NS, exec_unavailable, git, hello_app, wait_for

CLI = [str(Path(sys.executable).parent / "gitops-kd")]


def failing_stanza(policy: str) -> dict:
    return {
        "roleOrder": ["controller", "worker"],
        "from": [{"versions": ">=1.0.0 <2.0.0", "default": "keep"}],
        "downgrade": {"to": [{"versions": ">=1.0.0 <2.0.0", "default": "keep"}]},
        "hooks": {"postUpgrade": {"command": ["/bin/sh", "-c", "echo broken >&2; exit 3"], "timeoutSeconds": 30}},
        "failurePolicy": policy,
    }


def start(e2e: E2E) -> dict[str, list[str]]:
    git(e2e.repo, "config", "receive.denyCurrentBranch", "updateInstead")  # gitops-kd may push to it
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    roles = e2e.pods_by_role()
    if (reason := exec_unavailable(e2e, roles["controller"][0])) is not None:
        pytest.skip(f"embedded node cannot exec into the app container: {reason}")
    return roles


def failure_of(e2e: E2E) -> dict | None:
    return ((e2e.rollout() or {}).get("status") or {}).get("failure")


def test_halt_stops_and_names_the_commit(e2e: E2E) -> None:
    roles = start(e2e)
    workers = {p["metadata"]["name"]: p["metadata"]["uid"] for p in e2e.pods() if p["metadata"]["name"] in roles["worker"]}
    sha = e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=failing_stanza("halt"))}, "broken hook")
    failure = wait_for("the failure handled", lambda: failure_of(e2e), 60)
    assert failure["commit"] == sha and failure["policy"] == "halt" and failure["reason"] == "StepFailed"
    assert not failure.get("revertCommit")
    status = e2e.rollout()["status"]
    assert "broken" in status["message"] and f"git revert {sha}" in status["message"]
    assert status["phase"] == "Stalled" and {c["type"]: c["status"] for c in status["conditions"]}["Stalled"] == "True"
    halted = [e for e in e2e.rest.list("v1", "events", NS)["items"] if e["reason"] == "RolloutHalted"]
    assert len(halted) == 1 and sha[:12] in halted[0]["message"] and halted[0]["type"] == "Warning"
    assert {
        p["metadata"]["name"]: p["metadata"]["uid"] for p in e2e.pods() if p["metadata"]["name"] in roles["worker"]
    } == workers  # nothing else touched
    assert git(e2e.repo, "rev-parse", "HEAD") == sha  # no revert pushed


def test_revert_commit_pushes_a_revert_and_rolls_back(e2e: E2E) -> None:
    start(e2e)
    sha = e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=failing_stanza("revert-commit"))}, "broken hook")
    failure = wait_for("the revert pushed", lambda: (f := failure_of(e2e)) and f.get("revertCommit") and f, 60)
    assert failure["commit"] == sha
    head = git(e2e.repo, "rev-parse", "HEAD")
    assert failure["revertCommit"] == head and f"This reverts commit {sha}." in git(e2e.repo, "log", "-1", "--format=%B")
    ro = e2e.wait_ready_at("1.0.0", timeout=90)
    assert ro["spec"]["commit"] == head and ro["status"]["history"][-1]["fromVersion"] == "2.0.0"
    assert all(p["spec"]["containers"][0]["image"] == "gitops-kd/hello:1.0.0" for p in e2e.pods())

    def reasons() -> list[str]:
        return [e["reason"] for e in e2e.rest.list("v1", "events", NS)["items"]]

    # the Event follows the status write that made it Ready: waited for, not raced
    wait_for("the DowngradeSucceeded Event", lambda: "DowngradeSucceeded" in reasons(), 30)  # a downgrade is one
    assert "RevertPushed" in reasons(), reasons()
    assert {c["type"]: c["reason"] for c in ro["status"]["conditions"]}["Ready"] == "DowngradeSucceeded"


def test_halt_without_a_way_back_advises_rolling_forward_not_a_revert(e2e: E2E) -> None:
    """Advice is only what will work (issue 29, 2): a stalled 2.0.0 whose stanza has no downgrade.to for 1.0.0 is
    never told to `git revert` (the revert would be refused, and is: plan refuses it); it says roll forward."""
    start(e2e)
    stanza = failing_stanza("halt")
    del stanza["downgrade"]
    sha = e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=stanza)}, "broken hook, no way back")
    failure = wait_for("the failure handled", lambda: failure_of(e2e), 60)
    assert failure["commit"] == sha and failure["rollback"]["possible"] is False, failure
    message = e2e.rollout()["status"]["message"]
    assert f"git revert {sha} would be refused" in message and "roll forward" in message, message
    assert f"(git revert {sha}) to roll back" not in message, message
    halted = [e for e in e2e.rest.list("v1", "events", NS)["items"] if e["reason"] == "RolloutHalted"]
    assert len(halted) == 1 and "would be refused" in halted[0]["message"], halted
    git(e2e.repo, "revert", "--no-edit", sha)
    planned = subprocess.run(
        [*CLI, "plan", "--repo", str(e2e.repo), "--kubeconfig", str(e2e.cluster.kubeconfig)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert planned.returncode == 1 and "downgrade 2.0.0 -> 1.0.0 is refused" in planned.stdout, planned.stdout + planned.stderr


def test_history_keeps_the_stall_a_fix_commit_retried(e2e: E2E) -> None:
    """History tells the stall apart from its fix (issue 29, 9): a 2.0.0 stalled by a gate that never passes, then
    a commit fixing the gate at the same version, leaves a Stalled entry of the broken commit (with its reason)
    before the Succeeded entry of the fix."""
    start(e2e)
    stanza = {
        "roleOrder": ["controller", "worker"],
        "from": [{"versions": ">=1.0.0 <2.0.0", "default": "keep"}],
        "gate": {"exec": {"command": ["/bin/sh", "-c", "exit 1"]}, "periodSeconds": 1, "timeoutSeconds": 2},
    }
    broken = e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=stanza)}, "a gate that never passes")
    wait_for("the failure handled", lambda: failure_of(e2e), 60)
    stanza["gate"]["exec"]["command"] = ["/bin/sh", "-c", "true"]
    fix = e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=stanza)}, "fix the gate")
    ro = e2e.wait_ready_at("2.0.0", timeout=120)
    entries = [(h.get("commit"), h.get("result"), h.get("reason")) for h in ro["status"]["history"]]
    assert entries[-2:] == [(broken, "Stalled", "GateTimeout"), (fix, "Succeeded", None)], entries
