"""Ownership does not hang on a label (issue 28, item 4), end to end with real kubectl against the embedded cluster
and no admission webhook: a role StatefulSet whose kdcluster label was removed is still gitops-kd's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.drift import DRIFT_DETECTED
from gitops_kd.status.events import LABELS_RESTORED
from tests.e2e.harness import NS, wait_for

from .e2e_world import DriftWorld, settled_world

IMAGE = "gitops-kd/hello:1.0.0"
CLUSTER_LABEL, ROLE_LABEL = "kubedirector.hpe.com/kdcluster", "kubedirector.hpe.com/role"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[DriftWorld]:
    with settled_world(tmp_path) as w:
        yield w


def test_an_unlabelled_role_statefulset_is_still_guarded_against_drift(world: DriftWorld) -> None:
    """Invariant: a managed role StatefulSet is gitops-kd's by KubeDirector's controller ownerReference to the
    KDCluster, not only by its label. After `kubectl label sts <worker> kubedirector.hpe.com/kdcluster-
    kubedirector.hpe.com/role=controller --overwrite` (no webhook; its role is KubeDirector's status's), `kubectl
    set image` on it is reverted to Git's image, the removed and changed labels are drift (DriftDetected naming
    metadata.labels[...]) and are put back in one write (LabelsRestored Event)."""
    w = world
    sts = w.sts("worker")["metadata"]["name"]
    out = w.e2e.kubectl("label", "statefulset", sts, f"{CLUSTER_LABEL}-", f"{ROLE_LABEL}=controller", "--overwrite")
    assert out.returncode == 0, out.stderr
    out = w.e2e.kubectl("set", "image", f"statefulset/{sts}", "app=evil/hello:6.6.6")
    assert out.returncode == 0, out.stderr

    def live() -> dict[str, Any]:
        return w.e2e.rest.get("apps/v1", "statefulsets", NS, sts)

    def image() -> str:
        return next(c["image"] for c in live()["spec"]["template"]["spec"]["containers"] if c["name"] == "app")

    wait_for("the out-of-band image reverted", lambda: image() == IMAGE, 30)
    wait_for(
        "the kdcluster and role labels put back",
        lambda: (
            (live()["metadata"]["labels"].get(CLUSTER_LABEL), live()["metadata"]["labels"].get(ROLE_LABEL))
            == ("hello-dev", "worker")
        ),
        30,
    )
    wait_for(
        "DriftDetected naming the label",
        lambda: any(f"metadata.labels[{CLUSTER_LABEL}]" in e["message"] for e in w.kubectl_events(sts, DRIFT_DETECTED)),
        30,
    )
    restored = w.wait_event(sts, LABELS_RESTORED)
    assert f"{CLUSTER_LABEL}=hello-dev, {ROLE_LABEL}=worker" in restored["message"], restored["message"]
    assert len(w.kubectl_events(sts, LABELS_RESTORED)) == 1, "one write put the label back"
