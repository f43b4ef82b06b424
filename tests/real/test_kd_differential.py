"""Differential check of the embedded KubeDirector against the real one (--backend=kd|kd-upgrade): for the same
request both store the same KDApp / KDCluster spec (KubeDirector's webhook mutations) and refuse with the same
message (no default StorageClass; an edit of a KDApp a cluster uses). The emulator learns its facts from
KubeDirector; this is where a fact it got wrong shows."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from gitops_kd.testing import wait_for
from kdsim.cluster import EmbeddedCluster
from kubeplumb.rest import RestClient
from tests.real.controlplane import ROOT
from tests.real.kubedirector import DEFAULT_CLASS, RealKubeDirector

pytestmark = pytest.mark.kd
KD = "kubedirector.hpe.com/v1beta1"
CLASSES = "storage.k8s.io/v1", "storageclasses"
DEFAULT_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
CATALOG = sorted((ROOT / "tests" / "data" / "kubedirector" / "catalog").iterdir())
APPS = [*CATALOG, ROOT / "repo-template" / "apps" / "hello.yaml", ROOT / "repo-template" / "examples" / "hello-2.0.0.yaml"]


def _load(path: Path) -> dict[str, Any]:
    text = path.read_text()
    return dict(json.loads(text) if path.suffix == ".json" else yaml.safe_load(text))


def _in(body: dict[str, Any], ns: str) -> dict[str, Any]:
    doc = copy.deepcopy(body)
    doc["metadata"] = {k: v for k, v in doc["metadata"].items() if k in ("name", "labels", "annotations")}
    doc["metadata"]["namespace"] = ns
    return doc


class Both:
    """The same requests to the real KubeDirector's control plane and to an embedded cluster, each in `ns`."""

    def __init__(self, real: RestClient, embedded: RestClient, ns: str) -> None:
        self.real, self.embedded, self.ns = real, embedded, ns

    def each(self, call: Callable[[RestClient], Any]) -> tuple[Any, Any]:
        """(real answer, embedded answer); an ApiException's (status, message) stands for a refusal."""
        out = []
        for rest in (self.real, self.embedded):
            try:
                out.append(call(rest))
            except ApiException as exc:
                out.append((exc.status, json.loads(exc.body or "{}").get("message")))
        return out[0], out[1]


@pytest.fixture
def both(kd_joined: RealKubeDirector, tmp_path: Path) -> Iterator[Both]:
    real = RestClient(kd_joined.cp.api_client())
    ns = f"kdd-{uuid.uuid4().hex[:8]}"
    with EmbeddedCluster(None, controllers=False) as emb:
        embedded = RestClient(emb.api_client())
        for rest in (real, embedded):
            if rest.get_or_none("v1", "namespaces", None, ns) is None:
                rest.create("v1", "namespaces", None, {"metadata": {"name": ns}})
        yield Both(real, embedded, ns)
    real.delete("v1", "namespaces", None, ns)


@pytest.mark.parametrize("path", APPS, ids=[p.name for p in APPS])
def test_a_kdapp_is_stored_alike(kd_joined: RealKubeDirector, both: Both, path: Path) -> None:
    """Stock KubeDirector stores what the embedded one stores. The live-app-upgrade branch's KDApp CRD prunes
    unknown fields: gitops-kd's `spec.upgrade` stanza is dropped there (the embedded cluster's branch mode does not
    prune), and that is the only difference."""
    app = _in(_load(path), both.ns)
    real, embedded = both.each(lambda rest: rest.create(KD, "kubedirectorapps", both.ns, copy.deepcopy(app)))
    assert isinstance(real, dict), f"the real KubeDirector refused {path.name}: {real}"
    assert isinstance(embedded, dict), f"the embedded KubeDirector refused {path.name}: {embedded}"
    if kd_joined.backend == "kd-upgrade" and "upgrade" in app["spec"]:
        assert "upgrade" not in real["spec"]  # pruned by the branch's structural schema
        embedded["spec"].pop("upgrade")
    assert _differences(embedded["spec"], real["spec"]) == []


def _differences(mine: Any, theirs: Any, path: str = "spec") -> list[str]:
    """Where two stored specs differ, as paths with both values (readable where == is not)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        return [
            d
            for k in sorted(set(mine) | set(theirs))
            for d in _differences(mine.get(k, "<absent>"), theirs.get(k, "<absent>"), f"{path}.{k}")
        ]
    if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
        return [d for i, (a, b) in enumerate(zip(mine, theirs)) for d in _differences(a, b, f"{path}[{i}]")]
    return [] if mine == theirs else [f"{path}: embedded {mine!r}, real {theirs!r}"]


def test_the_hello_kdcluster_is_stored_alike_and_its_app_held_alike(both: Both) -> None:
    app = _in(_load(ROOT / "repo-template" / "apps" / "hello.yaml"), both.ns)
    cluster = _in(_load(ROOT / "repo-template" / "clusters" / "hello-dev.yaml"), both.ns)
    both.each(lambda rest: rest.create(KD, "kubedirectorapps", both.ns, copy.deepcopy(app)))
    real, embedded = both.each(lambda rest: rest.create(KD, "kubedirectorclusters", both.ns, copy.deepcopy(cluster)))
    assert isinstance(real, dict) and isinstance(embedded, dict), (real, embedded)
    assert embedded["spec"] == real["spec"]
    assert {r["storage"]["storageClassName"] for r in real["spec"]["roles"]} == {DEFAULT_CLASS}
    # KD counts the app as in use from its controller's first pass over the cluster (handleNewCluster calls
    # EnsureClusterAppReference, then writes status.generationUID), not from admission: wait for that pass.
    wait_for(
        "the real KubeDirector's first pass over hello-dev",
        lambda: bool((both.real.get(KD, "kubedirectorclusters", both.ns, "hello-dev").get("status") or {}).get("generationUID")),
        60,
    )

    def edit(rest: RestClient) -> Any:
        live = rest.get(KD, "kubedirectorapps", both.ns, "hello")
        live["spec"]["version"] = "2.0.0"
        return rest.replace(KD, "kubedirectorapps", both.ns, "hello", live)

    real, embedded = both.each(edit)
    assert isinstance(real, tuple) and real[0] == 400, real
    assert embedded == real


def test_without_a_default_storage_class_both_refuse_alike(both: Both) -> None:
    app = _in(_load(ROOT / "repo-template" / "apps" / "hello.yaml"), both.ns)
    cluster = _in(_load(ROOT / "repo-template" / "clusters" / "hello-dev.yaml"), both.ns)
    both.each(lambda rest: rest.create(KD, "kubedirectorapps", both.ns, copy.deepcopy(app)))

    def set_default(rest: RestClient, value: str) -> None:
        live = rest.get(*CLASSES, None, DEFAULT_CLASS)
        live["metadata"].setdefault("annotations", {})[DEFAULT_ANNOTATION] = value
        rest.replace(*CLASSES, None, DEFAULT_CLASS, live)

    tries = iter(range(1000))

    def refused(rest: RestClient) -> tuple[int, str] | None:
        """The create's refusal; None when it was admitted (KubeDirector's cache had the old class yet)."""
        body = copy.deepcopy(cluster)
        body["metadata"]["name"] = f"no-default-{next(tries)}"
        try:
            rest.create(KD, "kubedirectorclusters", both.ns, body)
        except ApiException as exc:
            return exc.status, json.loads(exc.body or "{}").get("message")
        return None

    try:
        both.each(lambda rest: set_default(rest, "false"))
        real = wait_for("the real KubeDirector refusing a cluster without a default StorageClass", lambda: refused(both.real), 30)
        embedded = refused(both.embedded)
    finally:
        both.each(lambda rest: set_default(rest, "true"))
    assert real[0] == 400, real
    assert embedded == real


@pytest.fixture
def both_running(kd_joined: RealKubeDirector) -> Iterator[Both]:
    """hello and hello-dev, configured, on the real KubeDirector and on an embedded cluster admitting as it does
    (the branch's mode on kd-upgrade, stock's on kd)."""
    real = RestClient(kd_joined.cp.api_client())
    ns = f"kds-{uuid.uuid4().hex[:8]}"
    mode = "live-app-upgrade" if kd_joined.backend == "kd-upgrade" else "strict"
    app = _in(_load(ROOT / "repo-template" / "apps" / "hello.yaml"), ns)
    cluster = _in(_load(ROOT / "repo-template" / "clusters" / "hello-dev.yaml"), ns)
    with EmbeddedCluster(None, kd_app_edits=mode) as emb:
        embedded = RestClient(emb.api_client())
        for rest in (real, embedded):
            rest.create("v1", "namespaces", None, {"metadata": {"name": ns}})
        wait_for(f"the default ServiceAccount in {ns}", lambda: kd_joined.cp.default_service_account_ready(real, ns), 60)
        for rest in (real, embedded):
            rest.create(KD, "kubedirectorapps", ns, copy.deepcopy(app))
            rest.create(KD, "kubedirectorclusters", ns, copy.deepcopy(cluster))
        for rest in (real, embedded):
            wait_for(
                "hello-dev configured",
                lambda r=rest: (
                    (r.get(KD, "kubedirectorclusters", ns, "hello-dev").get("status") or {}).get("state") == "configured"
                ),
                180,
            )
        yield Both(real, embedded, ns)
    real.delete("v1", "namespaces", None, ns)


def test_a_switch_of_spec_app_is_refused_alike(kd_joined: RealKubeDirector, both_running: Both) -> None:
    """Each switch the branch refuses (tests/sim/kubedirector/switch_cases.py) gets the same answer from the
    embedded KubeDirector as from the real one: on stock both say the app is read-only."""
    from tests.sim.kubedirector.switch_cases import NOT_UPGRADABLE, REFUSED_SWITCHES, candidate

    both, ns = both_running, both_running.ns

    def switch(name: str) -> Callable[[RestClient], Any]:
        return lambda rest: rest.patch(KD, "kubedirectorclusters", ns, "hello-dev", {"spec": {"app": name}})

    both.each(lambda rest: rest.create(KD, "kubedirectorapps", ns, _in(candidate("hello-first"), ns)))
    real, embedded = both.each(switch("hello-first"))
    assert isinstance(real, tuple) and real[0] == 400 and embedded == real, (real, embedded)
    if kd_joined.backend == "kd":
        assert real[1].endswith("The app property is read-only."), real
        return
    assert real[1].endswith(NOT_UPGRADABLE), real
    both.each(lambda rest: rest.patch(KD, "kubedirectorapps", ns, "hello", {"spec": {"upgradable": True}}))
    for case, (target, message) in sorted(REFUSED_SWITCHES.items()):
        both.each(lambda rest, t=target: rest.create(KD, "kubedirectorapps", ns, _in(t, ns)))
        real, embedded = both.each(switch(target["metadata"]["name"]))
        assert isinstance(real, tuple) and real[1].endswith(message), (case, real)
        assert embedded == real, case
