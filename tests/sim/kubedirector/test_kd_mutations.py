"""The embedded KubeDirector's mutating webhook (kdsim/kubedirector/mutate.py): the KDApp and KDCluster it stores
are the ones real KubeDirector stores (pkg/validator app.go validateRoles, cluster.go admitClusterCR), and a
KDCluster needing a default StorageClass where none exists is refused with KubeDirector's message."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from kdsim.cluster import EmbeddedCluster
from kubeplumb.rest import RestClient

KD = "kubedirector.hpe.com/v1beta1"
NS = "default"
TEMPLATE = Path(__file__).resolve().parents[3] / "repo-template"
APP = yaml.safe_load((TEMPLATE / "apps" / "hello.yaml").read_text())
CLUSTER = yaml.safe_load((TEMPLATE / "clusters" / "hello-dev.yaml").read_text())
NO_DEFAULT = (
    'admission webhook "hard-validate-cr.kubedirector.hpe.com" denied the request: \nstorageClassName is '
    "not specified for one or more roles, and no default storage class is available."
)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(None) as c:
        yield c


def _create(rest: RestClient, plural: str, body: dict[str, Any]) -> dict[str, Any]:
    return rest.create(KD, plural, NS, copy.deepcopy(body))


def test_the_stored_kdapp_has_its_defaults_moved_into_every_role(cluster: EmbeddedCluster) -> None:
    """Invariant: what is stored (and what a reader and the next update see) is KubeDirector's form."""
    rest = RestClient(cluster.api_client())
    _create(rest, "kubedirectorapps", APP)
    spec = rest.get(KD, "kubedirectorapps", NS, "hello")["spec"]
    assert not {k for k in spec if k.startswith("default")}, spec
    for role in spec["roles"]:
        assert role["imageRepoTag"] == APP["spec"]["defaultImageRepoTag"]
        assert role["persistDirs"] == APP["spec"]["defaultPersistDirs"]
        assert role["configPackage"] is None and role["maxLogSizeDump"] == 256
    before = rest.get(KD, "kubedirectorapps", NS, "hello")
    again = copy.deepcopy(APP)
    again["metadata"]["resourceVersion"] = before["metadata"]["resourceVersion"]
    after = rest.replace(KD, "kubedirectorapps", NS, "hello", again)  # Git's spelling once more: a no-op
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"] == 1


def test_the_stored_kdcluster_has_kubedirectors_defaults_filled_in(cluster: EmbeddedCluster) -> None:
    rest = RestClient(cluster.api_client())
    _create(rest, "kubedirectorapps", APP)
    _create(rest, "kubedirectorclusters", CLUSTER)
    spec = rest.get(KD, "kubedirectorclusters", NS, "hello-dev")["spec"]
    assert spec["appCatalog"] == "local" and spec["serviceType"] == "LoadBalancer" and spec["namingScheme"] == "UID"
    assert [r["storage"]["storageClassName"] for r in spec["roles"]] == ["standard", "standard"]


def test_a_kdcluster_needing_a_default_storage_class_is_refused_without_one(cluster: EmbeddedCluster) -> None:
    """Invariant: with no default StorageClass, KubeDirector refuses a role's storage without storageClassName
    (cluster.go validateRoleStorageClass, noDefaultStorageClass), and nothing is stored."""
    rest = RestClient(cluster.api_client())
    rest.delete("storage.k8s.io/v1", "storageclasses", None, "standard")
    _create(rest, "kubedirectorapps", APP)
    with pytest.raises(ApiException) as raised:
        _create(rest, "kubedirectorclusters", CLUSTER)
    assert raised.value.status == 400
    assert json.loads(raised.value.body)["message"] == NO_DEFAULT
    assert rest.get_or_none(KD, "kubedirectorclusters", NS, "hello-dev") is None
    named = copy.deepcopy(CLUSTER)
    for role in named["spec"]["roles"]:
        role["storage"]["storageClassName"] = "fast"
    with pytest.raises(ApiException) as raised:
        _create(rest, "kubedirectorclusters", named)
    assert "\nUnable to fetch storageClassName(fast) for role(controller).\n" in json.loads(raised.value.body)["message"]
    rest.create("storage.k8s.io/v1", "storageclasses", None, {"metadata": {"name": "fast"}, "provisioner": "x"})
    stored = _create(rest, "kubedirectorclusters", named)
    assert [r["storage"]["storageClassName"] for r in stored["spec"]["roles"]] == ["fast", "fast"]
