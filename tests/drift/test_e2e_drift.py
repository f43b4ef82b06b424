"""End to end with real kubectl against the embedded cluster: edits of owned fields are alerted on every
channel (Event, metric, webhook, log) and reverted; replicas are KubeDirector's; alert-only leaves drift be."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitops_kd.drift import DRIFT_DETECTED, DRIFT_RESOLVED, DRIFT_REVERTED, POLICY_ANNOTATION
from tests.e2e.harness import NS, wait_for

from .e2e_world import DriftWorld, settled_world

IMAGE = "gitops-kd/hello:1.0.0"
DETECTED = "gitops_kd_drift_detected_total"
ACTIVE = "gitops_kd_drift_active"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DriftWorld]:
    with settled_world(tmp_path_factory.mktemp("drift-e2e")) as w:
        yield w


def app_image(sts: dict) -> str:
    return next(c["image"] for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "app")


def app_ports(sts: dict) -> list[int]:
    app = next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "app")
    return [p["containerPort"] for p in app.get("ports") or ()]


def assert_alerted_and_reverted(
    w: DriftWorld, kind: str, name: str, path: str, expected: object, actual: object, before: float
) -> None:
    event = w.wait_event(name, DRIFT_DETECTED, count=1)
    assert event["type"] == "Warning" and event["involvedObject"]["kind"] == kind
    assert path in event["message"] and str(actual) in event["message"] and str(expected) in event["message"]
    assert w.guard.synced_commit(("default", "hello-dev"))[:12] in event["message"]
    payload = w.wait_payload(name, "detected")
    assert payload["action"] == "reverted" and payload["object"]["kind"] == kind
    assert {"path": path, "expected": expected, "actual": actual} in payload["fields"]
    assert payload["commit"] == w.guard.synced_commit(("default", "hello-dev"))
    assert w.metric(DETECTED, kind, name) == before + 1
    w.wait_event(name, DRIFT_REVERTED)
    wait_for("gauge back to 0", lambda: w.metric(ACTIVE, kind, name) == 0)
    w.wait_payload(name, "resolved")


def test_kubectl_set_image_is_alerted_and_reverted(world: DriftWorld) -> None:
    w = world
    sts = w.sts("worker")["metadata"]["name"]
    before = w.metric(DETECTED, "StatefulSet", sts)
    out = w.e2e.kubectl("set", "image", f"statefulset/{sts}", "app=evil/hello:6.6.6")
    assert out.returncode == 0, out.stderr
    took = w.timed("image reverted", lambda: app_image(w.sts("worker")) == IMAGE)
    assert took < 5
    assert w.watcher.last_trigger is not None and w.watcher.last_trigger[:3] == ("StatefulSet", NS, sts)
    assert_alerted_and_reverted(
        w, "StatefulSet", sts, "spec.template.spec.containers[app].image", IMAGE, "evil/hello:6.6.6", before
    )


def test_kubectl_patch_update_strategy(world: DriftWorld) -> None:
    w = world
    sts = w.sts("controller")["metadata"]["name"]
    before = w.metric(DETECTED, "StatefulSet", sts)
    out = w.e2e.kubectl(
        "patch", "statefulset", sts, "--type=merge", "-p", json.dumps({"spec": {"updateStrategy": {"type": "RollingUpdate"}}})
    )
    assert out.returncode == 0, out.stderr
    w.timed("OnDelete restored", lambda: w.sts("controller")["spec"]["updateStrategy"]["type"] == "OnDelete")
    assert_alerted_and_reverted(w, "StatefulSet", sts, "spec.updateStrategy.type", "OnDelete", "RollingUpdate", before)


def test_kubectl_edit_with_scripted_editor(world: DriftWorld, tmp_path: Path) -> None:
    w = world
    sts = w.sts("worker")["metadata"]["name"]
    before = w.metric(DETECTED, "StatefulSet", sts)
    detected, reverted = (len(w.kubectl_events(sts, reason)) for reason in (DRIFT_DETECTED, DRIFT_REVERTED))
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/containerPort: 8080/containerPort: 8089/' \"$1\"\n")
    editor.chmod(0o755)
    out = _kubectl_edit(w, str(editor), sts)
    assert out.returncode == 0, out.stderr
    w.timed("container port reverted", lambda: app_ports(w.sts("worker")) == [8080])
    event = w.wait_event(sts, DRIFT_DETECTED, count=detected + 1)
    assert "ports[8080]" in event["message"] and "ports[8089]" in event["message"]
    assert w.metric(DETECTED, "StatefulSet", sts) == before + 1
    w.wait_event(sts, DRIFT_REVERTED, count=reverted + 1)


def _kubectl_edit(w: DriftWorld, editor: str, sts: str):  # type: ignore[no-untyped-def]
    import subprocess

    env = {**os.environ, "EDITOR": editor, "KUBE_EDITOR": editor}
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(w.e2e.cluster.kubeconfig), "edit", f"statefulset/{sts}"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_service_port_edit(world: DriftWorld) -> None:
    w = world
    svc = w.worker_service()["metadata"]["name"]
    before = w.metric(DETECTED, "Service", svc)
    out = w.e2e.kubectl(
        "patch", "service", svc, "--type=json", "-p", json.dumps([{"op": "replace", "path": "/spec/ports/0/port", "value": 9999}])
    )
    assert out.returncode == 0, out.stderr
    w.timed(
        "service port reverted", lambda: [p["port"] for p in w.e2e.rest.get("v1", "services", NS, svc)["spec"]["ports"]] == [8080]
    )
    port_name = w.worker_service()["spec"]["ports"][0]["name"]
    assert_alerted_and_reverted(w, "Service", svc, f"spec.ports[{port_name}].port", 8080, 9999, before)


def test_kubectl_scale_is_kubedirectors_not_drift(world: DriftWorld) -> None:
    w = world
    sts = w.sts("worker")["metadata"]["name"]
    detected = len(w.kubectl_events(sts, DRIFT_DETECTED))
    count = w.metric(DETECTED, "StatefulSet", sts)
    triggered = w.watcher.triggered
    out = w.e2e.kubectl("scale", f"statefulset/{sts}", "--replicas=3")
    assert out.returncode == 0, out.stderr
    wait_for("KubeDirector restored 2 replicas", lambda: w.sts("worker")["spec"]["replicas"] == 2, 60)
    w.e2e.wait_settled()
    assert len(w.kubectl_events(sts, DRIFT_DETECTED)) == detected
    assert w.metric(DETECTED, "StatefulSet", sts) == count and w.guard.last_drifts == ()
    assert w.watcher.triggered == triggered  # replica and status writes are not owned-field edits


def test_alert_only_leaves_the_edit_and_keeps_alerting(world: DriftWorld) -> None:
    w = world
    import yaml

    doc = yaml.safe_load((w.e2e.repo / "clusters/hello-dev.yaml").read_text())
    doc["metadata"]["annotations"] = {POLICY_ANNOTATION: "alert-only"}
    commit = w.e2e.commit({"clusters/hello-dev.yaml": yaml.safe_dump(doc)}, "hello-dev: drift alert-only")
    w.wait_baseline(commit)
    sts = w.sts("worker")["metadata"]["name"]
    count = w.metric(DETECTED, "StatefulSet", sts)
    detected = len(w.kubectl_events(sts, DRIFT_DETECTED))
    out = w.e2e.kubectl("set", "image", f"statefulset/{sts}", "app=hand/made:1")
    assert out.returncode == 0, out.stderr
    event = w.wait_event(sts, DRIFT_DETECTED, count=detected + 1)
    assert "alert-only" in event["message"] and "hand/made:1" in event["message"]
    payload = w.wait_payload(sts, "detected", count=len(w.payloads(sts, "detected")))
    assert payload["action"] == "alert-only"
    # Let several reconciles pass (each re-detects the drift), then the edit must still be there.
    seen = len(w.rx.bodies)
    checks = w.guard.checks
    for i in range(1, 4):
        w.controller.kick()
        wait_for(f"reconcile {i} after the edit", lambda i=i: w.guard.checks >= checks + i, 10)
        assert [d.name for d in w.guard.last_drifts] == [sts]
    assert app_image(w.sts("worker")) == "hand/made:1"
    assert w.metric(ACTIVE, "StatefulSet", sts) == 1
    assert w.metric(DETECTED, "StatefulSet", sts) == count + 1
    assert len(w.rx.bodies) == seen  # no repeated webhook for the same occurrence
    out = w.e2e.kubectl("set", "image", f"statefulset/{sts}", f"app={IMAGE}")
    assert out.returncode == 0, out.stderr
    w.wait_event(sts, DRIFT_RESOLVED)
    wait_for("gauge back to 0", lambda: w.metric(ACTIVE, "StatefulSet", sts) == 0)
