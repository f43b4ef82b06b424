"""Ready is what the pods run: the KDRollout never stays Ready while its members run another version.

Reproduces what issue 27 saw on KubeDirector's live-app-upgrade branch: KubeDirector itself switched the cluster's
`spec.app` to a new KDApp and patched the StatefulSets' images, so every pod ran 2.0.0 while the KDRollout said
`Ready=True UpToDate: all members run hello 1.0.0`. Here the same changes are made out of band (the embedded
KubeDirector in "upgrade" mode admits the spec.app switch, as the branch does)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.constants import StallReason
from gitops_kd.status.conditions import is_true
from tests.e2e.harness import E2E, KD, wait_for

V2_IMAGE = "gitops-kd/hello:2.0.0"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[E2E]:
    e2e = E2E(tmp_path, kd_app_edits="upgrade")
    try:
        yield e2e
    finally:
        e2e.close()


def _run_v2_out_of_band(e2e: E2E) -> None:
    """What the branch's native upgrade does: a new KDApp, the cluster's spec.app switched to it, the role
    StatefulSets' app image patched, and (OnDelete) each pod recreated at it."""
    app = yaml.safe_load(e2e.template("examples/hello-2.0.0.yaml"))
    app["metadata"]["name"] = "hello-v2"
    app["spec"].pop("upgrade", None)
    e2e.rest.create(KD, "kubedirectorapps", e2e.ns, app)
    out = e2e.kubectl("patch", "kdcluster", "hello-dev", "--type=merge", "-p", '{"spec":{"app":"hello-v2"}}')
    assert out.returncode == 0, out.stderr
    for sts in e2e.rest.list("apps/v1", "statefulsets", e2e.ns)["items"]:
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": V2_IMAGE}]}}}}
        out = e2e.kubectl("patch", "statefulset", sts["metadata"]["name"], "-p", json.dumps(patch))
        assert out.returncode == 0, out.stderr
    for pod in e2e.pods():
        assert e2e.kubectl("delete", "pod", pod["metadata"]["name"], "--wait=false").returncode == 0


def _app_images(e2e: E2E) -> set[str]:
    return {c["image"] for p in e2e.pods() for c in p["spec"]["containers"] if c["name"] == "app"}


def test_pods_running_another_version_are_never_left_ready(world: E2E) -> None:
    """Invariant: Ready only when every member pod runs the version the KDRollout records. With the pods moved to
    2.0.0 behind gitops-kd's back and the plan refused (spec.app is not gitops-kd's to change back), the KDRollout
    is Stalled PodsOffVersion naming the pod and both images, and `kubectl wait --for=condition=Ready` fails."""
    world.start_controller()
    ready = world.wait_ready_at("1.0.0")
    world.wait_settled()
    assert ready["status"]["images"] == {"controller": "gitops-kd/hello:1.0.0", "worker": "gitops-kd/hello:1.0.0"}
    _run_v2_out_of_band(world)
    wait_for("every pod at 2.0.0", lambda: len(world.pods()) == 3 and _app_images(world) == {V2_IMAGE}, 90)

    def stalled() -> dict[str, Any] | None:
        status = (world.rollout() or {}).get("status") or {}
        return status if status.get("stalledReason") == StallReason.PODS_OFF_VERSION else None

    status = wait_for("KDRollout Stalled PodsOffVersion", stalled, 60)
    assert not is_true(status["conditions"], "Ready"), status["conditions"]
    assert V2_IMAGE in status["message"] and "gitops-kd/hello:1.0.0 of hello 1.0.0" in status["message"]
    out = world.kubectl("wait", "--for=condition=Ready", "kdrollout/hello-dev", "--timeout=3s")
    assert out.returncode != 0, out.stdout
