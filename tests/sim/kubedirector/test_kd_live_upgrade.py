"""kd_app_edits="live-app-upgrade": the embedded KubeDirector as its live-app-upgrade branch. Its CRDs show the
branch's fields, a KDApp in use may gain `upgradable` (nothing else), a KDCluster's `spec.app` switch is admitted
only under the branch's rules (refused with its message otherwise), and a switch makes KubeDirector patch the
role StatefulSets' image and record status.upgradeInfo; a switch back to prevApp meanwhile is its rollback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from gitops_kd.kd.flavour import LIVE_UPGRADE
from gitops_kd.observe.kdflavour import detect
from gitops_kd.testing import wait_for
from kdsim.cluster import EmbeddedCluster
from kubeplumb.rest import RestClient
from tests.sim.kubedirector.switch_cases import DENIED, NOT_UPGRADABLE, REFUSED_SWITCHES, TEMPLATE, candidate, hello

KD = "kubedirector.hpe.com/v1beta1"
NS = "default"
APPS, CLUSTERS = "kubedirectorapps", "kubedirectorclusters"


def _message(exc: ApiException) -> str:
    return str(json.loads(exc.body or "{}").get("message"))


def _configured(rest: RestClient) -> bool:
    return (rest.get(KD, CLUSTERS, NS, "hello-dev").get("status") or {}).get("state") == "configured"


@pytest.fixture(scope="module")
def branch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedCluster, RestClient]]:
    with EmbeddedCluster(tmp_path_factory.mktemp("kd-branch"), kd_app_edits="live-app-upgrade") as c:
        rest = RestClient(c.api_client())
        rest.create(KD, APPS, NS, {**hello(), "metadata": {"name": "hello", "namespace": NS}})
        cluster = yaml.safe_load((TEMPLATE / "clusters" / "hello-dev.yaml").read_text())
        rest.create(KD, CLUSTERS, NS, {**cluster, "metadata": {"name": "hello-dev", "namespace": NS}})
        wait_for("hello-dev configured", lambda: _configured(rest), 120)
        yield c, rest


def _switch(rest: RestClient, app: str) -> str | None:
    try:
        rest.patch(KD, CLUSTERS, NS, "hello-dev", {"spec": {"app": app}})
    except ApiException as exc:
        return _message(exc)
    return None


def test_the_crds_show_the_branch(branch: tuple[EmbeddedCluster, RestClient]) -> None:
    assert detect(branch[1]).name == LIVE_UPGRADE


def test_an_app_in_use_gains_upgradable_and_nothing_else(branch: tuple[EmbeddedCluster, RestClient]) -> None:
    rest = branch[1]
    with pytest.raises(ApiException) as refused:
        rest.patch(KD, APPS, NS, "hello", {"spec": {"upgradable": True, "version": "1.0.1"}})
    assert "cannot be deleted or modified while referenced" in _message(refused.value)
    assert "upgradable" not in rest.get(KD, APPS, NS, "hello")["spec"]
    rest.create(KD, APPS, NS, {**candidate("hello-first"), "metadata": {"name": "hello-first", "namespace": NS}})
    assert _switch(rest, "hello-first") == DENIED + NOT_UPGRADABLE  # the app it runs must say upgradable
    rest.patch(KD, APPS, NS, "hello", {"spec": {"upgradable": True}})
    assert rest.get(KD, APPS, NS, "hello")["spec"]["upgradable"] is True


@pytest.mark.parametrize("case", sorted(REFUSED_SWITCHES))
def test_a_switch_the_branch_refuses(branch: tuple[EmbeddedCluster, RestClient], case: str) -> None:
    rest = branch[1]
    if not rest.get(KD, APPS, NS, "hello")["spec"].get("upgradable"):
        rest.patch(KD, APPS, NS, "hello", {"spec": {"upgradable": True}})
    app, message = REFUSED_SWITCHES[case]
    name = app["metadata"]["name"]
    if rest.get_or_none(KD, APPS, NS, name) is None:
        rest.create(KD, APPS, NS, {**app, "metadata": {"name": name, "namespace": NS}})
    before = rest.get(KD, CLUSTERS, NS, "hello-dev")
    assert _switch(rest, name) == DENIED + message
    assert rest.get(KD, CLUSTERS, NS, "hello-dev")["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_switch_changes_nothing_else(branch: tuple[EmbeddedCluster, RestClient]) -> None:
    rest = branch[1]
    rest.patch(KD, APPS, NS, "hello", {"spec": {"upgradable": True}})
    if rest.get_or_none(KD, APPS, NS, "hello-v2") is None:
        rest.create(KD, APPS, NS, {**candidate("hello-v2"), "metadata": {"name": "hello-v2", "namespace": NS}})
    with pytest.raises(ApiException) as refused:
        rest.patch(KD, CLUSTERS, NS, "hello-dev", {"spec": {"app": "hello-v2", "serviceType": "NodePort"}})
    assert _message(refused.value).endswith("Do not change spec.app with other spec fields in the same time.")


def _images(rest: RestClient) -> set[str]:
    sets = rest.list("apps/v1", "statefulsets", NS)["items"]
    return {c["image"] for s in sets for c in s["spec"]["template"]["spec"]["containers"]}


def test_a_switch_patches_the_images_and_a_switch_back_rolls_back(branch: tuple[EmbeddedCluster, RestClient]) -> None:
    """KD's reaction (pkg/executor/statefulset.go, cluster.go handleClusterUpgrade): the new app's images in the
    StatefulSets, status.upgradeInfo.prevApp; while it lasts, the cluster may go only back to prevApp."""
    rest = branch[1]
    rest.patch(KD, APPS, NS, "hello", {"spec": {"upgradable": True}})
    for name in ("hello-v2", "hello-first"):  # the module's cluster is shared; xdist may run this test first
        if rest.get_or_none(KD, APPS, NS, name) is None:
            rest.create(KD, APPS, NS, {**candidate(name), "metadata": {"name": name, "namespace": NS}})
    wait_for("hello-dev configured", lambda: _configured(rest), 60)
    assert _switch(rest, "hello-v2") is None
    wait_for("the StatefulSets at 2.0.0", lambda: _images(rest) == {"gitops-kd/hello:2.0.0"}, 60)
    status: dict[str, Any] = rest.get(KD, CLUSTERS, NS, "hello-dev")["status"]
    assert status["upgradeInfo"] == {"isRollingBack": False, "prevApp": "hello"} and status["state"] == "updating"
    assert (
        _switch(rest, "hello-first") == DENIED + "The hello-dev cluster already is upgrading, but it can be "
        "rolled back to the previous app"
    )
    assert _switch(rest, "hello") == DENIED + NOT_UPGRADABLE.replace("1.0.0", "2.0.0")  # even back, the app it runs
    rest.patch(KD, APPS, NS, "hello-v2", {"spec": {"upgradable": True}})  # must say upgradable
    assert _switch(rest, "hello") is None  # the rollback, while not configured
    wait_for("the StatefulSets back at 1.0.0", lambda: _images(rest) == {"gitops-kd/hello:1.0.0"}, 60)
    wait_for("KubeDirector to finish the rollback once every pod runs 1.0.0", lambda: _configured(rest), 120)
    status = rest.get(KD, CLUSTERS, NS, "hello-dev")["status"]
    assert not status.get("upgradeInfo") and status["app"] == "hello"
