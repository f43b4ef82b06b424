"""Drift across a controller restart (`gitops-kd run` stopped and started): the in-sync baseline is kept on the
KDRollout, so an edit made while the controller was down is alerted and reverted, and a Git change made while
it was down is converged without an alert."""

from __future__ import annotations

from typing import Any

from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, git, wait_for


def _run(e2e: E2E) -> RunProcess:
    """`gitops-kd run`; the same name each time, so a restart keeps its cache dir (applied commit)."""
    return RunProcess("controller", e2e.tmp, e2e.cluster.kubeconfig, str(e2e.repo), "--log-level", "warning")


def _stop(proc: RunProcess) -> None:
    assert proc.stop() == 0, proc.log()[-3000:]


def _recorded(e2e: E2E) -> str | None:
    return ((e2e.rollout() or {}).get("status") or {}).get("syncedCommit")


def _worker_sts(e2e: E2E) -> dict[str, Any]:
    return next(
        s
        for s in e2e.rest.list("apps/v1", "statefulsets", "default")["items"]
        if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
    )


def _image(e2e: E2E, name: str) -> str:
    sts = e2e.rest.get("apps/v1", "statefulsets", "default", name)
    return str(sts["spec"]["template"]["spec"]["containers"][0]["image"])


def _drift_events(e2e: E2E) -> list[dict[str, Any]]:
    return [e for e in e2e.rest.list("v1", "events", "default")["items"] if e["reason"] == "DriftDetected"]


def _head(e2e: E2E) -> str:
    return git(e2e.repo, "rev-parse", "HEAD")


def _sync_then_stop(e2e: E2E) -> None:
    """Run the controller until hello-dev is Ready at 1.0.0 and recorded in sync, then stop it."""
    proc = _run(e2e)
    try:
        e2e.wait_ready_at("1.0.0")
        wait_for("the in-sync record on the KDRollout", lambda: _recorded(e2e) == _head(e2e), 60)
    finally:
        _stop(proc)


def test_edit_made_while_the_controller_was_down_is_alerted_after_restart(e2e: E2E) -> None:
    _sync_then_stop(e2e)
    name = _worker_sts(e2e)["metadata"]["name"]
    assert e2e.kubectl("set", "image", f"statefulset/{name}", "app=gitops-kd/hello:6.6.6").returncode == 0
    assert not _drift_events(e2e)
    proc = _run(e2e)
    try:
        found = wait_for(
            "a DriftDetected event after the restart",
            lambda: [e for e in _drift_events(e2e) if e["involvedObject"]["name"] == name] or None,
            60,
        )
        assert "image" in found[0]["message"] and "6.6.6" in found[0]["message"]
        wait_for("the edit reverted", lambda: _image(e2e, name) == "gitops-kd/hello:1.0.0", 30)
    finally:
        _stop(proc)


def test_git_change_made_while_the_controller_was_down_is_not_drift(e2e: E2E) -> None:
    _sync_then_stop(e2e)
    before = _recorded(e2e)
    e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    proc = _run(e2e)
    try:
        e2e.wait_ready_at("2.0.0", timeout=120)
        wait_for("the in-sync record at the new commit", lambda: _recorded(e2e) == _head(e2e), 60)
        assert _recorded(e2e) != before
        assert not _drift_events(e2e), [e["message"] for e in _drift_events(e2e)]
        assert _image(e2e, _worker_sts(e2e)["metadata"]["name"]) == "gitops-kd/hello:2.0.0"
    finally:
        _stop(proc)
