"""Executor actions against the embedded cluster: effects, idempotence, Events, KDRollout status."""

from __future__ import annotations

import subprocess
from typing import Any

from gitops_kd.execute import Executor
from gitops_kd.plan.actions import (
    DeletePod,
    EnsureRollout,
    FinishRollout,
    PatchServicePorts,
    SetOnDelete,
    Stall,
    StartGate,
    Wait,
)
from tests.execute.conftest import NS, events, pod_ready, wait_for

ROLLOUT = "gitops-kd.io/v1alpha1"


def members(obj: dict[str, Any], role: str) -> tuple[str, list[dict[str, Any]]]:
    r = next(r for r in obj["status"]["roles"] if r["id"] == role)
    return r["statefulSet"], r["members"]


def test_set_on_delete_is_idempotent(hello: Any) -> None:
    cluster, rest, obj = hello
    sts, _ = members(obj, "worker")
    ex = Executor(cluster.api_client())
    action = SetOnDelete(NS, sts, "worker", "hello-dev")
    assert ex.execute(action).changed
    live = rest.get("apps/v1", "statefulsets", NS, sts)
    assert live["spec"]["updateStrategy"] == {"type": "OnDelete"}
    again = ex.execute(action)
    assert (
        not again.changed
        and rest.get("apps/v1", "statefulsets", NS, sts)["metadata"]["generation"] == live["metadata"]["generation"]
    )
    assert any("OnDelete" in e["message"] for e in events(rest, "UpdateStrategySet"))


def test_service_ports_patch(hello: Any) -> None:
    cluster, rest, obj = hello
    _, worker_members = members(obj, "worker")
    svc = worker_members[0]["service"]
    ex = Executor(cluster.api_client())
    action = PatchServicePorts(NS, svc, ({"name": "http-hello-http", "port": 8081},), "hello-dev")
    assert ex.execute(action).changed
    ports = rest.get("v1", "services", NS, svc)["spec"]["ports"]
    assert [(p["name"], p["port"], p["targetPort"]) for p in ports] == [("http-hello-http", 8081, 8081)]
    assert not ex.execute(action).changed


def test_delete_pod_uid_precondition(hello: Any) -> None:
    cluster, rest, obj = hello
    _, ctl = members(obj, "controller")
    pod = ctl[0]["pod"]
    uid = rest.get("v1", "pods", NS, pod)["metadata"]["uid"]
    ex = Executor(cluster.api_client())
    stale = ex.execute(DeletePod(NS, pod, "not-the-uid", "hello-dev", "controller"))
    assert not stale.changed and "409" in stale.message
    assert rest.get("v1", "pods", NS, pod)["metadata"]["uid"] == uid
    assert ex.execute(DeletePod(NS, pod, uid, "hello-dev", "controller")).changed
    wait_for(
        "pod recreated and Ready",
        lambda: (p := rest.get_or_none("v1", "pods", NS, pod)) is not None and p["metadata"]["uid"] != uid and pod_ready(p),
    )
    assert not ex.execute(DeletePod(NS, pod, uid, "hello-dev", "controller")).changed
    assert any(pod in e["message"] for e in events(rest, "PodReplaced"))


def test_rollout_lifecycle_and_kubectl_wait(hello: Any) -> None:
    cluster, rest, obj = hello
    ex = Executor(cluster.api_client())
    start = EnsureRollout(NS, "hello-dev", "hello", "2.0.0", "1.0.0", "c0ffee" * 6, "upgrade")
    assert ex.execute(start).changed
    ro = rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")
    assert ro["metadata"]["ownerReferences"][0]["uid"] == obj["metadata"]["uid"]
    assert ro["spec"] == {"app": "hello", "targetVersion": "2.0.0", "commit": "c0ffee" * 6}
    assert ro["status"]["phase"] == "Upgrading" and ro["status"]["fromVersion"] == "1.0.0"
    assert not ex.execute(start).changed  # same rollout: no reset
    _, ctl = members(obj, "controller")
    assert ex.execute(StartGate(NS, "hello-dev", ctl[0]["pod"])).changed
    assert not ex.execute(StartGate(NS, "hello-dev", ctl[0]["pod"])).changed
    ro = rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")
    assert ro["status"]["currentPod"] == ctl[0]["pod"] and ro["status"]["currentRole"] == "controller"
    stall = Stall(NS, "hello-dev", "GateTimedOut", "gate did not pass within 1s")
    assert ex.execute(stall).changed and not ex.execute(stall).changed
    ro = rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")
    assert ro["status"]["phase"] == "Stalled"
    assert {c["type"]: c["status"] for c in ro["status"]["conditions"]} == {"Ready": "False", "Stalled": "True"}
    assert events(rest, "UpgradeStalled")[0]["type"] == "Warning"
    rest.patch(
        ROLLOUT, "kdrollouts", NS, "hello-dev", {"status": {"pods": {ctl[0]["pod"]: {"hookDone": True}}}}, subresource="status"
    )
    retry = EnsureRollout(NS, "hello-dev", "hello", "2.0.0", "1.0.0", "d" * 40, "upgrade")
    assert ex.execute(retry).changed and not ex.execute(retry).changed
    ro = rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")
    assert ro["status"]["phase"] == "Upgrading" and ro["spec"]["commit"] == "d" * 40
    assert ro["status"]["pods"][ctl[0]["pod"]]["hookDone"] is True  # progress kept
    assert ro["status"]["observedGeneration"] == ro["metadata"]["generation"]
    assert {c["type"]: c["status"] for c in ro["status"]["conditions"]} == {"Ready": "False", "Reconciling": "True"}
    assert ex.execute(FinishRollout(NS, "hello-dev", "2.0.0")).changed
    assert not ex.execute(FinishRollout(NS, "hello-dev", "2.0.0")).changed
    ro = rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")
    assert ro["status"]["appVersion"] == "2.0.0" and ro["status"]["history"][-1]["result"] == "Succeeded"
    done = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "wait",
            "--for=condition=Ready",
            "kdrollout/hello-dev",
            "--timeout=10s",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    table = subprocess.run(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "get", "kdro", "hello-dev"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert table.stdout.split("\n")[0].split()[:6] == ["NAME", "APP", "VERSION", "TARGET", "PHASE", "READY"]
    assert events(rest, "UpgradeSucceeded")


def test_wait_is_a_noop(hello: Any) -> None:
    cluster, _rest, _obj = hello
    out = Executor(cluster.api_client()).execute(Wait("pod not Ready", 1.5, (NS, "hello-dev")))
    assert not out.changed and out.requeue_after == 1.5


def test_apply_app_is_idempotent_and_owns_gitops_kd_annotations(hello: Any) -> None:
    import yaml

    from gitops_kd.plan.actions import ApplyApp
    from tests.execute.conftest import ROOT

    cluster, rest, _obj = hello
    ex = Executor(cluster.api_client())
    doc = yaml.safe_load((ROOT / "repo-template" / "apps" / "hello.yaml").read_text())
    doc["metadata"] = {"name": "hello-copy", "namespace": NS, "annotations": {"gitops-kd.io/upgrade": "{}"}}
    first = ex.execute(ApplyApp(NS, "hello-copy", doc, "1.0.0"))
    assert first.changed and "created" in first.message
    assert not ex.execute(ApplyApp(NS, "hello-copy", doc, "1.0.0")).changed
    rest.patch(
        "kubedirector.hpe.com/v1beta1",
        "kubedirectorapps",
        NS,
        "hello-copy",
        {"metadata": {"annotations": {"someone.else/note": "kept"}}},
    )
    doc["metadata"]["annotations"] = {}
    doc["spec"]["label"]["description"] = "changed in Git"
    assert ex.execute(ApplyApp(NS, "hello-copy", doc, "1.0.0")).changed
    live = rest.get("kubedirector.hpe.com/v1beta1", "kubedirectorapps", NS, "hello-copy")
    assert live["metadata"]["annotations"] == {"someone.else/note": "kept"}
    assert live["spec"]["label"]["description"] == "changed in Git"
    assert not ex.execute(ApplyApp(NS, "hello-copy", doc, "1.0.0")).changed


def test_delete_pod_refused_while_another_pod_is_down(hello: Any) -> None:
    cluster, rest, obj = hello
    _, workers = members(obj, "worker")
    _, ctl = members(obj, "controller")
    for pod in (workers[0]["pod"], ctl[0]["pod"]):
        wait_for(f"{pod} Ready", lambda p=pod: pod_ready(rest.get_or_none("v1", "pods", NS, p)))
    ex = Executor(cluster.api_client())
    victim = rest.get("v1", "pods", NS, workers[0]["pod"])
    rest.delete("v1", "pods", NS, ctl[0]["pod"])  # someone else takes the controller down
    target = rest.get("v1", "pods", NS, workers[0]["pod"])
    out = ex.execute(DeletePod(NS, workers[0]["pod"], target["metadata"]["uid"], "hello-dev", "worker"))
    assert out.failed and "not deleting" in out.message and out.requeue_after == 1.0
    assert rest.get("v1", "pods", NS, workers[0]["pod"])["metadata"]["uid"] == victim["metadata"]["uid"]
    wait_for("controller pod back and Ready", lambda: pod_ready(rest.get_or_none("v1", "pods", NS, ctl[0]["pod"])))


def test_a_change_the_api_server_refuses_is_a_warning_event_and_a_held_failure(hello: Any) -> None:
    from gitops_kd.plan.actions import ApplyCluster

    cluster, rest, _obj = hello
    body = {
        "apiVersion": "kubedirector.hpe.com/v1beta1",
        "kind": "KubeDirectorCluster",
        "metadata": {"name": "bad-members", "namespace": NS},
        "spec": {"app": "hello", "roles": [{"id": "controller", "members": "three"}]},
    }
    outcome = Executor(cluster.api_client()).execute(ApplyCluster(NS, "bad-members", body, create=True))
    assert outcome.failed and not outcome.changed and outcome.requeue_after == 30.0
    assert "refused by the API server (422)" in outcome.message and "members" in outcome.message
    # no Event on a KDCluster that does not exist (issue 42): the controller's GitOpsKDSource carries the refusal
    # (tests/e2e/test_refused_manifest.py)
    assert not [e for e in events(rest, "ApplyFailed") if e["involvedObject"]["name"] == "bad-members"]
    assert rest.get_or_none("kubedirector.hpe.com/v1beta1", "kubedirectorclusters", NS, "bad-members") is None
