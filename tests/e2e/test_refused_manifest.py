"""A manifest gitops-kd refuses to apply says so where people look (issue 42, 2): without a default StorageClass
KubeDirector would refuse hello-dev, so gitops-kd does not create it; the GitOpsKDSource is Stalled ApplyRefused
naming the KDCluster and KubeDirector's reason, `gitops-kd status` shows the cluster Missing where it would be and
exits 1, the UI shows it (not "All clusters idle"), and the refusal is one Warning Event on the GitOpsKDSource,
counted as it repeats (count, lastTimestamp), never an Event on the KDCluster that does not exist."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.server.ui import UiSettings
from tests.e2e.harness import E2E, wait_for

GITOPS_KD = str(Path(sys.executable).parent / "gitops-kd")
SOURCE = ("gitops-kd.io/v1alpha1", "gitopskdsources")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[E2E]:
    e2e = E2E(tmp_path)
    try:
        yield e2e
    finally:
        e2e.close()


def _ready(obj: dict[str, Any] | None) -> dict[str, Any]:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or () if c["type"] == "Ready"), {})


def test_a_cluster_kubedirector_would_refuse_is_a_stalled_source_shown_where_it_would_be(world: E2E) -> None:
    """Invariant: a refused write never looks idle: the source and `gitops-kd status` say it (exit 1), the UI shows
    the object, and the Warning Event is attached to an object that exists and deduplicated as Kubernetes does."""
    for sc in world.rest.list("storage.k8s.io/v1", "storageclasses")["items"]:
        world.rest.delete("storage.k8s.io/v1", "storageclasses", None, sc["metadata"]["name"])
    controller = world.start_controller(
        listen=("127.0.0.1", 0), ui=UiSettings(refresh_seconds=0.25, cache_seconds=0.1), record=True
    )

    def stalled() -> dict[str, Any] | None:
        ready = _ready(world.rest.get_or_none(*SOURCE, world.ns, "gitops-kd"))
        return ready if ready.get("reason") == "ApplyRefused" else None

    ready = wait_for("the GitOpsKDSource Stalled ApplyRefused", stalled, 90)
    assert ready["status"] == "False", ready
    assert "KubeDirectorCluster default/hello-dev" in ready["message"] and "no default storage class" in ready["message"], ready
    source = world.rest.get(*SOURCE, world.ns, "gitops-kd")
    assert source["status"]["applyRefused"].startswith("KubeDirectorCluster default/hello-dev: not created"), source["status"]
    assert world.rest.get_or_none("kubedirector.hpe.com/v1beta1", "kubedirectorclusters", world.ns, "hello-dev") is None

    out = subprocess.run(
        [GITOPS_KD, "status", "--kubeconfig", str(world.backend.kubeconfig), "--namespace", world.ns],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    row = next((line for line in out.stdout.splitlines() if line.startswith("default/hello-dev ")), "")
    assert "Missing" in row and "not created" in row and "no default storage class" in out.stdout, out.stdout
    assert "no KDCluster managed by gitops-kd" not in out.stderr, out.stderr

    assert controller.http is not None
    with urllib.request.urlopen(controller.http.url + "/ui/api/fleet", timeout=10) as answer:
        fleet = json.loads(answer.read())
    assert "All clusters idle" not in fleet["summary"], fleet["summary"]
    shown = [c for app in fleet["data"]["apps"] for w in app["waves"] for c in w["clusters"] if c["name"] == "hello-dev"]
    assert shown and shown[0]["health"] == "Missing" and "no default storage class" in shown[0]["healthMessage"], shown

    def refusal_events() -> list[dict[str, Any]]:
        found = world.rest.list("v1", "events", world.ns)["items"]
        return [e for e in found if "no default storage class" in e.get("message", "")]

    counted = wait_for(
        "the refusal counted again on its Event",
        lambda: (es := refusal_events()) and max(e.get("count") or 1 for e in es) >= 2 and es,
        120,
    )
    assert all(e["involvedObject"]["kind"] == "GitOpsKDSource" for e in counted), [e["involvedObject"] for e in counted]
    assert len(counted) == 1, [(e["metadata"]["name"], e.get("count")) for e in counted]
    assert counted[0]["lastTimestamp"] >= counted[0]["firstTimestamp"]
