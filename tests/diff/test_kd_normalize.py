"""gitops_kd/kd/normalize.py (the controller's model of what KubeDirector stores) agrees with the embedded
KubeDirector's webhook (kdsim/kubedirector/mutate.py): two implementations written apart from KubeDirector's
pkg/validator, checked against each other on every KDApp of KubeDirector's example catalog and on edge cases."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.diff.fields import cluster_changes
from gitops_kd.kd.normalize import stored_app_spec, stored_cluster_spec
from kdsim.kubedirector import mutate

TEMPLATE = Path(__file__).resolve().parents[2] / "repo-template"
HELLO = yaml.safe_load((TEMPLATE / "apps" / "hello.yaml").read_text())["spec"]


def _load(path: Path) -> Any:
    return json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())


def _edge_cases() -> list[dict[str, Any]]:
    explicit = copy.deepcopy(HELLO)  # a role with its own values, an explicit null package, a max log size
    explicit["roles"][0].update(imageRepoTag="other:1", persistDirs=["/data"], configPackage=None, maxLogSizeDump=9)
    package = copy.deepcopy(HELLO)
    package["defaultConfigPackage"] = {"packageURL": "file:///opt/pkg.tgz", "useNewSetupLayout": True}
    package["defaultEventList"] = ["configure"]
    package["defaultMaxLogSizeDump"] = 1024
    no_image = copy.deepcopy(HELLO)  # KD refuses it: nothing is patched
    del no_image["defaultImageRepoTag"]
    return [HELLO, explicit, package, no_image]


def test_the_controller_and_the_embedded_kubedirector_agree_on_the_stored_kdapp(kd_shared: Path) -> None:
    specs = _edge_cases() + [_load(f)["spec"] for f in sorted((kd_shared / "catalog").iterdir())]
    assert len(specs) > 4
    for spec in specs:
        assert stored_app_spec(spec) == mutate.app_spec(spec), spec.get("distroID")


def test_the_stored_kdapp_is_idempotent_and_keeps_no_default() -> None:
    stored = stored_app_spec(HELLO)
    assert stored_app_spec(stored) == stored
    assert not [k for k in stored if k.startswith("default")]
    assert [(r["imageRepoTag"], r["configPackage"], r["maxLogSizeDump"]) for r in stored["roles"]] == [
        ("gitops-kd/hello:1.0.0", None, 256)
    ] * 2


def test_secret_key_values_are_not_compared_and_kd_filled_role_fields_are_no_change() -> None:
    spec = {
        "app": "hello",
        "roles": [{"id": "worker", "storage": {"size": "1Gi"}, "secretKeys": [{"name": "token", "value": "s3cr3t"}]}],
    }
    assert stored_cluster_spec(spec)["roles"][0]["secretKeys"] == [{"name": "token"}]
    live, _ = mutate.cluster_spec(
        spec,
        namespace="default",
        app={"metadata": {"namespace": "default"}, "spec": {"roles": [{"id": "worker", "cardinality": "2+"}]}},
        storage_class="standard",
        classes=frozenset({"standard"}),
    )
    assert live["roles"][0]["members"] == 2 and live["roles"][0]["storage"]["storageClassName"] == "standard"
    assert cluster_changes(live, spec) == ()


@pytest.mark.parametrize(
    "annotation", ["storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"]
)
def test_both_agree_on_the_default_storage_class(annotation: str) -> None:
    from gitops_kd.kd.storage import default_class

    classes = [{"metadata": {"name": "slow"}}, {"metadata": {"name": "fast", "annotations": {annotation: "true"}}}]
    assert default_class(classes) == mutate.default_storage_class(classes) == "fast"
    assert default_class(classes[:1]) is mutate.default_storage_class(classes[:1]) is None
