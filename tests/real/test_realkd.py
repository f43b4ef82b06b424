"""The real KubeDirector backends (--backend=kd|kd-upgrade) are what they claim: KubeDirector's own webhook stores
a KDApp in its normalised form, a hello KDCluster comes up through the simulated node, and stock KubeDirector
refuses an edit of a KDApp a cluster uses (the facts gitops-kd and the embedded KubeDirector are held to)."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from gitops_kd.testing import pod_ready, wait_for
from kubeplumb.rest import RestClient
from tests.real.controlplane import ROOT
from tests.real.kubedirector import RealKubeDirector

pytestmark = pytest.mark.kd
KD = "kubedirector.hpe.com/v1beta1"
IN_USE = "KubeDirectorApp resource cannot be deleted or modified while referenced by the following KubeDirectorCluster resources"


def _doc(path: str) -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "repo-template" / path).read_text()))


@pytest.fixture
def kd_ns(kd_joined: RealKubeDirector) -> Iterator[tuple[RestClient, str]]:
    rest = RestClient(kd_joined.cp.api_client())
    ns = f"kd-{uuid.uuid4().hex[:8]}"
    rest.create("v1", "namespaces", None, {"metadata": {"name": ns}})
    wait_for(f"the default ServiceAccount in {ns}", lambda: kd_joined.cp.default_service_account_ready(rest, ns), 60)
    yield rest, ns
    rest.delete("v1", "namespaces", None, ns)


def _deploy_hello(rest: RestClient, ns: str) -> None:
    """repo-template's hello app and hello-dev cluster created directly; returns once every pod is Ready and
    KubeDirector says the cluster is configured."""
    app, cluster = _doc("apps/hello.yaml"), _doc("clusters/hello-dev.yaml")
    rest.create(KD, "kubedirectorapps", ns, {**app, "metadata": {**app["metadata"], "namespace": ns}})
    meta = {k: v for k, v in cluster["metadata"].items() if k != "labels"}
    rest.create(KD, "kubedirectorclusters", ns, {**cluster, "metadata": {**meta, "namespace": ns}})
    members = sum(role["members"] for role in cluster["spec"]["roles"])

    def running() -> bool:
        pods = rest.list("v1", "pods", ns)["items"]
        return len(pods) == members and all(pod_ready(p) for p in pods)

    wait_for(f"{members} hello pods Ready", running, 180)
    wait_for(
        "the KDCluster configured",
        lambda: (rest.get(KD, "kubedirectorclusters", ns, "hello-dev").get("status") or {}).get("state") == "configured",
        120,
    )


def test_kubedirectors_webhook_stores_the_kdapp_with_its_defaults_in_every_role(kd_ns: tuple[RestClient, str]) -> None:
    rest, ns = kd_ns
    app = _doc("apps/hello.yaml")
    rest.create(KD, "kubedirectorapps", ns, {**app, "metadata": {**app["metadata"], "namespace": ns}})
    stored = rest.get(KD, "kubedirectorapps", ns, app["metadata"]["name"])["spec"]
    assert "defaultImageRepoTag" not in stored and "defaultPersistDirs" not in stored
    for role in stored["roles"]:
        assert role["imageRepoTag"] == app["spec"]["defaultImageRepoTag"]
        assert role["persistDirs"] == app["spec"]["defaultPersistDirs"]
        assert role["maxLogSizeDump"] == 256


def test_a_hello_cluster_comes_up_and_stock_kubedirector_holds_its_kdapp(
    kd_joined: RealKubeDirector, kd_ns: tuple[RestClient, str]
) -> None:
    rest, ns = kd_ns
    _deploy_hello(rest, ns)
    edited = copy.deepcopy(rest.get(KD, "kubedirectorapps", ns, "hello"))
    edited["spec"]["version"] = "2.0.0"
    if kd_joined.backend == "kd":
        with pytest.raises(ApiException) as refused:
            rest.replace(KD, "kubedirectorapps", ns, "hello", edited)
        assert IN_USE in str(refused.value.body)


def test_the_branch_upgrades_natively_by_a_switch_of_spec_app(kd_joined: RealKubeDirector, kd_ns: tuple[RestClient, str]) -> None:
    """The live-app-upgrade branch's own path (what gitops-kd would use natively there): the in-use KDApp may gain
    `upgradable` (its one allowed change); a KDCluster's spec.app may switch to another KDApp only when both are
    upgradable, and KubeDirector then rewrites the StatefulSets' image itself and records the app it left in
    status.upgradeInfo.prevApp. Stock KubeDirector refuses the switch (the app property is read-only)."""
    rest, ns = kd_ns
    _deploy_hello(rest, ns)  # the branch refuses a switch while the cluster is not yet configured
    target = _doc("apps/hello.yaml")  # the branch admits only image, version, cardinality and package URL changes
    target["metadata"] = {"name": "hello-2", "namespace": ns}
    target["spec"]["version"], target["spec"]["defaultImageRepoTag"] = "2.0.0", "gitops-kd/hello:2.0.0"
    if kd_joined.backend == "kd-upgrade":
        target["spec"]["upgradable"] = True
    rest.create(KD, "kubedirectorapps", ns, target)

    def switch() -> str | None:
        try:
            rest.patch(KD, "kubedirectorclusters", ns, "hello-dev", {"spec": {"app": "hello-2"}})
        except ApiException as exc:
            return str(json.loads(exc.body or "{}").get("message"))
        return None

    refused = switch()
    if kd_joined.backend == "kd":
        assert refused is not None and "The app property is read-only." in refused, refused
        return
    assert refused == (
        'admission webhook "hard-validate-cr.kubedirector.hpe.com" denied the request: \nThe '
        "application gitops-kd/hello of version 1.0.0 doesn't support live upgrade."
    ), refused
    rest.patch(KD, "kubedirectorapps", ns, "hello", {"spec": {"upgradable": True}})
    assert switch() is None

    def images() -> bool:
        sets = rest.list("apps/v1", "statefulsets", ns)["items"]
        return {c["image"] for s in sets for c in s["spec"]["template"]["spec"]["containers"]} == {"gitops-kd/hello:2.0.0"}

    wait_for("KubeDirector to set the StatefulSets' image to 2.0.0", images, 120)
    status = rest.get(KD, "kubedirectorclusters", ns, "hello-dev")["status"]
    assert status["upgradeInfo"]["prevApp"] == "hello"
