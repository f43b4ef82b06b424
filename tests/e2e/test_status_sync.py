"""`gitops-kd status` against a running controller and a real Git repo: applied revision, branch head, SYNC and
HEALTH per cluster, a refused head shown with its reasons and exit status 1."""

from __future__ import annotations

import json

from click.testing import CliRunner, Result

from gitops_kd.cli import main
from tests.e2e.harness import E2E, NS, ROLLOUT, git, hello_app, wait_for


def status(e2e: E2E, *args: str) -> Result:
    return CliRunner().invoke(main, ["status", "--kubeconfig", str(e2e.cluster.kubeconfig), *args])


def _cluster_line(done: Result) -> list[str]:
    return next(row for row in done.output.splitlines() if row.startswith("default/hello-dev")).split()


def source_status(e2e: E2E) -> dict:
    return (e2e.rest.get_or_none(ROLLOUT, "gitopskdsources", NS, "gitops-kd") or {}).get("status") or {}


def test_status_shows_applied_revision_and_a_refused_head_with_exit_1(e2e: E2E) -> None:
    """Invariant: a refused branch head never hides behind `Healthy` and exit 0: status names the applied
    revision, the refused head and the reason, marks every cluster Refused and exits 1; it is Synced / exit 0
    before."""
    e2e.start_controller(record=True)
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    applied = git(e2e.repo, "rev-parse", "HEAD")
    wait_for(
        "the source Ready",
        lambda: any(c.get("type") == "Ready" and c.get("status") == "True" for c in source_status(e2e).get("conditions") or ()),
        30,
    )
    # the record names the KubeDirector the embedded cluster's CRDs show (stock master's)
    assert source_status(e2e)["kubeDirector"].startswith("stock KubeDirector:"), source_status(e2e)
    done = wait_for(
        "status Synced and Healthy",
        lambda: r if (r := status(e2e)).exit_code == 0 and ["Synced", "Healthy"] == _cluster_line(r)[4:6] else None,
        30,
    )
    assert f"{applied[:12]} hello 1.0.0" in done.output, done.output
    shown = CliRunner().invoke(main, ["history", "hello", "-n", NS, "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert shown.exit_code == 0, shown.output
    header, first = shown.output.splitlines()[:2]
    assert header.split() == ["CLUSTER", "APP", "VERSION", "FROM", "COMMIT", "STARTED", "DURATION", "RESULT", "SUBJECT"]
    assert first.split()[:5] == ["default/hello-dev", "hello", "1.0.0", "-", applied[:12]], shown.output
    assert first.split()[-3:] == ["Deployed", "hello", "1.0.0"], shown.output
    assert [
        h["result"]
        for h in json.loads(
            CliRunner().invoke(main, ["history", "hello", "-o", "json", "--kubeconfig", str(e2e.cluster.kubeconfig)]).output
        )
    ] == ["Deployed"]
    reasons = {
        e["reason"]
        for e in e2e.rest.list("v1", "events", NS)["items"]
        if e["involvedObject"]["name"] == "hello-dev" and e["involvedObject"]["kind"] == "KubeDirectorCluster"
    }
    assert "Deployed" in reasons and "Adopted" not in reasons, reasons  # gitops-kd created it: a deploy

    head = e2e.commit({"apps/hello.yaml": hello_app("0.9.0", upgrade=None)}, "hello 0.9.0 without a stanza")
    wait_for(
        "the head refused in the GitOpsKDSource",
        lambda: source_status(e2e).get("lastAttemptedRevision") == head and source_status(e2e).get("refusal"),
        30,
    )
    done = status(e2e)
    assert done.exit_code == 1, done.output
    out = done.output
    assert f"{applied[:12]} hello 1.0.0" in out and head[:12] in out, out
    assert f"head {head[:12]} of file://" in out and "refused" in out and "apps/hello.yaml" in out, out
    assert _cluster_line(done)[4:6] == ["Refused", "Healthy"], out
    data = json.loads(status(e2e, "-o", "json").output)
    assert data[0]["sync"]["status"] == "Refused" and data[0]["source"]["headRevision"] == head
    assert data[0]["source"]["appliedRevision"] == applied and data[0]["source"]["appliedSubject"] == "hello 1.0.0"
    assert any("apps/hello.yaml" in r for r in data[0]["source"]["refusal"]), data
    one = status(e2e, "hello-dev")
    assert one.exit_code == 1 and "sync Refused" in one.output, one.output
    usage = status(e2e, "hello-dev", "-A")
    assert usage.exit_code == 2, usage.output


def test_sync_polls_git_now_through_the_gitopskdsource(e2e: E2E) -> None:
    """Invariant: with an hour between polls, a new commit is seen only when `gitops-kd sync` asks: the
    controller polls at once (status.lastHandledReconcileAt set to the request) and the head is evaluated;
    a refused head makes `sync` exit 1 with the reason."""
    e2e.start_controller(record=True, poll_interval=3600)
    e2e.wait_ready_at("1.0.0")
    first = source_status(e2e).get("lastAttemptedRevision")
    git(e2e.repo, "commit", "-q", "--allow-empty", "-m", "nothing changes")  # no trigger: the next poll is in 1h
    head = git(e2e.repo, "rev-parse", "HEAD")
    assert head != first and source_status(e2e).get("lastAttemptedRevision") == first
    done = CliRunner().invoke(main, ["sync", "-n", NS, "--kubeconfig", str(e2e.cluster.kubeconfig), "--timeout", "60"])
    assert done.exit_code == 0, done.output
    assert f"head {head[:12]}" in done.output and "sync requested on gitopskdsource default/gitops-kd" in done.output
    assert f"new revision {head[:12]} accepted (was {first[:12]})" in done.output, done.output
    assert source_status(e2e)["lastHandledReconcileAt"] and source_status(e2e)["lastAttemptedRevision"] == head
    (e2e.repo / "apps" / "hello.yaml").write_text(hello_app("0.9.0", upgrade=None))
    git(e2e.repo, "commit", "-q", "-am", "hello 0.9.0 without a stanza")
    refused = CliRunner().invoke(main, ["sync", "-n", NS, "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert refused.exit_code == 1 and "refused" in refused.output and "apps/hello.yaml" in refused.output, refused.output
    assert "new revision" not in refused.output and f"applied {head[:12]}" in refused.output, refused.output
    missing = CliRunner().invoke(main, ["sync", "nope", "-n", NS, "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert missing.exit_code == 1 and "no GitOpsKDSource default/nope" in missing.output, missing.output


def _watch_status(e2e: E2E, version: str, timeout: float = 120) -> list[tuple[int, str, str]]:
    """`gitops-kd status` run again and again until hello-dev is Idle, Ready and settled at `version`: each
    (exit status, SYNC, HEALTH) seen."""
    seen: list[tuple[int, str, str]] = []

    def done() -> bool:
        r = status(e2e, "-o", "json")
        row = json.loads(r.output)[0]
        seen.append((r.exit_code, row["sync"]["status"], row["status"]))
        ro = e2e.rollout() or {}
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in (ro.get("status") or {}).get("conditions") or ())
        plan = e2e.controller.last_plan if e2e.controller is not None else None
        return (
            ready
            and ro["status"].get("appVersion") == version
            and plan is not None
            and plan.empty
            and seen[-1][1:] == ("Synced", "Healthy")
        )

    wait_for(f"hello-dev settled at {version}", done, timeout, 0.1)
    return seen


def test_pods_replaced_by_an_upgrade_and_its_revert_are_progressing_never_degraded(e2e: E2E) -> None:
    """Invariant: while gitops-kd replaces pods on purpose (an upgrade, then the downgrade of its `git revert`),
    `gitops-kd status` never calls the cluster Degraded or Missing and exits 0; it shows the rollout (OutOfSync,
    Progressing) and ends Synced and Healthy."""
    e2e.start_controller(record=True)
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    upgrade = e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    seen = _watch_status(e2e, "2.0.0")
    git(e2e.repo, "revert", "--no-edit", upgrade)
    e2e.controller.trigger_poll()
    seen += _watch_status(e2e, "1.0.0")
    assert all(code == 0 and health not in ("Degraded", "Missing") for code, _sync, health in seen), seen
    assert "OutOfSync" in {s for _c, s, _h in seen} and "Progressing" in {h for _c, _s, h in seen}, seen
    # every attempt keeps its commit's subject in the cluster: `history` shows them without the Git repository
    shown = CliRunner().invoke(main, ["history", "hello", "-o", "json", "--kubeconfig", str(e2e.cluster.kubeconfig)])
    rows = [(h["version"], h["result"], h["subject"]) for h in json.loads(shown.output)]
    assert rows == [
        ("1.0.0", "Deployed", "hello 1.0.0"),
        ("2.0.0", "Succeeded", "hello 2.0.0"),
        ("1.0.0", "Succeeded", 'Revert "hello 2.0.0"'),
    ], shown.output
