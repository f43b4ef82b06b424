"""End to end without exec: a Git commit upgrades hello-dev live, in the declared role order, one pod down
at most, member Services get the new port; `kubectl wait --for=condition=Ready kdrollout/hello-dev` works."""

from __future__ import annotations

from tests.e2e.harness import E2E, NS, PodWatch, hello_app, pod_ready


def start_at_1_0_0(e2e: E2E) -> None:
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()


def test_role_order_one_pod_down_and_ports(e2e: E2E) -> None:
    start_at_1_0_0(e2e)
    roles = e2e.pods_by_role()
    watch = PodWatch(e2e.rest, "hello-dev", expected=3)
    stanza = {"roleOrder": ["worker", "controller"], "from": [{"versions": ">=1.0.0 <2.0.0", "default": "keep"}]}
    e2e.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=stanza)}, "hello 2.0.0, workers first")
    ro = e2e.wait_ready_at("2.0.0")
    watch.stop()
    wanted = [(roles["worker"][1], "worker"), (roles["worker"][0], "worker"), (roles["controller"][0], "controller")]
    assert [(name, role) for name, role, _t in watch.deleted] == wanted
    assert watch.max_down == 1
    for pod in e2e.pods():
        assert pod["spec"]["containers"][0]["image"] == "gitops-kd/hello:2.0.0"
        assert pod_ready(pod)
    services = [
        s
        for s in e2e.rest.list("v1", "services", NS)["items"]
        if (s["metadata"].get("labels") or {}).get("kubedirector.hpe.com/role") == "worker"
    ]
    assert len(services) == 2
    assert all([p["port"] for p in s["spec"]["ports"]] == [8081] for s in services)
    assert ro["status"]["history"][-1]["version"] == "2.0.0" and ro["status"]["history"][-1]["fromVersion"] == "1.0.0"
    done = e2e.kubectl("wait", "--for=condition=Ready", "kdrollout/hello-dev", "--timeout=20s")
    assert done.returncode == 0, done.stderr
    reasons = [e["reason"] for e in e2e.rest.list("v1", "events", NS)["items"] if e["involvedObject"].get("name") == "hello-dev"]
    assert reasons.count("PodReplaced") >= 3 and "UpgradeStarted" in reasons and "UpgradeSucceeded" in reasons
    assert e2e.controller is not None and e2e.controller.source.applied_commit is not None
