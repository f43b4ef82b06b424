"""The controller's metrics, scraped over HTTP from a real aiohttp server."""

from __future__ import annotations

import pytest
from aiohttp import web
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from gitops_kd.server.metrics import ControllerMetrics, make_metrics_handler, poll_result_label
from kubeplumb.workqueue import RequeueAfter


def scrape(server) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    reply = server.request("GET", "/metrics")
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for family in text_string_to_metric_families(reply.body.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


@pytest.fixture
def metrics_server(serve):
    metrics = ControllerMetrics()
    app = web.Application()
    app.router.add_get("/metrics", make_metrics_handler(metrics))
    return metrics, serve(app)


def test_every_metric_is_exposed_with_its_labels(metrics_server) -> None:
    metrics, server = metrics_server
    metrics.observe_reconcile("success", 0.2)
    metrics.observe_reconcile("error", 3.0)
    metrics.record_poll("changed")
    metrics.record_poll("unchanged")
    metrics.record_poll("unchanged")
    metrics.set_applied_commit("a" * 40)
    metrics.drift_detected("StatefulSet", "default", "web-abc")
    metrics.upgrade_step("DeletePod", "success")
    metrics.set_rollout_phase("default", "hello-dev", "Upgrading")
    metrics.commit_refused()
    metrics.set_leader(True)
    got = scrape(server)
    assert got[("gitops_kd_reconcile_total", (("result", "success"),))] == 1
    assert got[("gitops_kd_reconcile_total", (("result", "error"),))] == 1
    assert got[("gitops_kd_reconcile_duration_seconds_count", ())] == 2
    assert got[("gitops_kd_reconcile_duration_seconds_sum", ())] == pytest.approx(3.2)
    assert got[("gitops_kd_reconcile_duration_seconds_bucket", (("le", "0.25"),))] == 1
    assert got[("gitops_kd_git_poll_total", (("result", "unchanged"),))] == 2
    assert got[("gitops_kd_applied_commit_info", (("commit", "a" * 40),))] == 1
    drift = (("kind", "StatefulSet"), ("name", "web-abc"), ("namespace", "default"))
    assert got[("gitops_kd_drift_detected_total", drift)] == 1
    assert got[("gitops_kd_drift_active", drift)] == 1
    assert got[("gitops_kd_upgrade_steps_total", (("result", "success"), ("step", "DeletePod")))] == 1
    phase = {
        p: got[("gitops_kd_rollout_phase", (("cluster", "hello-dev"), ("namespace", "default"), ("phase", p)))]
        for p in ("Idle", "Upgrading", "Downgrading", "Stalled")
    }
    assert phase == {"Idle": 0, "Upgrading": 1, "Downgrading": 0, "Stalled": 0}
    assert got[("gitops_kd_refused_commits_total", ())] == 1
    assert got[("gitops_kd_leader", ())] == 1


def test_state_changes_replace_old_series(metrics_server) -> None:
    metrics, server = metrics_server
    metrics.set_applied_commit("a" * 40)
    metrics.set_applied_commit("b" * 40)
    metrics.drift_detected("StatefulSet", "ns", "x")
    metrics.drift_resolved("StatefulSet", "ns", "x")
    metrics.set_rollout_phase("ns", "c", "Upgrading")
    metrics.set_rollout_phase("ns", "c", "Idle")
    metrics.set_leader(False)
    got = scrape(server)
    commits = [labels for (name, labels) in got if name == "gitops_kd_applied_commit_info"]
    assert commits == [(("commit", "b" * 40),)]
    drift = (("kind", "StatefulSet"), ("name", "x"), ("namespace", "ns"))
    assert got[("gitops_kd_drift_active", drift)] == 0
    assert got[("gitops_kd_drift_detected_total", drift)] == 1
    assert got[("gitops_kd_rollout_phase", (("cluster", "c"), ("namespace", "ns"), ("phase", "Idle")))] == 1
    assert got[("gitops_kd_rollout_phase", (("cluster", "c"), ("namespace", "ns"), ("phase", "Upgrading")))] == 0
    assert got[("gitops_kd_leader", ())] == 0
    metrics.forget_object("StatefulSet", "ns", "x")
    metrics.forget_rollout("ns", "c")
    got = scrape(server)
    assert not [k for k in got if k[0].startswith(("gitops_kd_drift", "gitops_kd_rollout_phase"))]


def test_reconcile_timer_records_result_and_errors(metrics_server) -> None:
    metrics, server = metrics_server
    with metrics.reconcile_timer():
        pass
    with pytest.raises(RequeueAfter):  # as the runtime does: set "requeue", then raise RequeueAfter
        with metrics.reconcile_timer() as outcome:
            outcome["result"] = "requeue"
            raise RequeueAfter(1.0)
    with pytest.raises(RuntimeError):
        with metrics.reconcile_timer():
            raise RuntimeError("boom")
    got = scrape(server)
    for result in ("success", "requeue", "error"):
        assert got[("gitops_kd_reconcile_total", (("result", result),))] == 1
    assert got[("gitops_kd_reconcile_duration_seconds_count", ())] == 3


def test_openmetrics_is_served_when_asked(metrics_server) -> None:
    metrics, server = metrics_server
    metrics.commit_refused()
    reply = server.request("GET", "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("application/openmetrics-text")
    assert reply.body.rstrip().endswith(b"# EOF")
    assert b"gitops_kd_refused_commits_total 1.0" in reply.body


def test_own_registry_not_the_global_one() -> None:
    first, second = ControllerMetrics(), ControllerMetrics()  # would raise "Duplicated timeseries" if global
    first.commit_refused()
    assert first.registry is not REGISTRY
    assert REGISTRY.get_sample_value("gitops_kd_refused_commits_total") is None
    assert second.registry.get_sample_value("gitops_kd_refused_commits_total") == 0


def test_bad_label_values_are_rejected() -> None:
    metrics = ControllerMetrics()
    with pytest.raises(ValueError, match="rollout phase 'Running'"):
        metrics.set_rollout_phase("ns", "c", "Running")
    with pytest.raises(ValueError, match="git poll result 'ok'"):
        metrics.record_poll("ok")


def test_poll_result_label() -> None:
    assert poll_result_label(changed=False, accepted=False, failed=True) == "error"
    assert poll_result_label(changed=False, accepted=True, failed=False) == "unchanged"
    assert poll_result_label(changed=True, accepted=True, failed=False) == "changed"
    assert poll_result_label(changed=True, accepted=False, failed=False) == "refused"
