"""KubeDirector's app-in-use rule (pure): which clusters reference an app, which spec edits count, the message."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kdsim.kubedirector.app_in_use import denial, referencing_clusters, spec_changed

HELLO_YAML = Path(__file__).resolve().parents[3] / "repo-template" / "apps" / "hello.yaml"
HELLO: dict[str, Any] = yaml.safe_load(HELLO_YAML.read_text())["spec"]


def _cluster(
    ns: str, name: str, app: str = "hello", catalog: str | None = None, created: str = "2024-01-01T00:00:00Z", **meta: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"app": app, "roles": []}
    if catalog:
        spec["appCatalog"] = catalog
    return {"metadata": {"namespace": ns, "name": name, "creationTimestamp": created, **meta}, "spec": spec}


def _refs(clusters: list[dict[str, Any]], ns: str = "team", apps: tuple[str, ...] = ("team",)) -> list[str]:
    return referencing_clusters(
        ns, "hello", clusters, system_namespace="kubedirector", app_exists=lambda n, name: name == "hello" and n in apps
    )


def test_local_clusters_of_the_namespace_reference_the_app_in_creation_order() -> None:
    clusters = [
        _cluster("team", "b", created="2024-01-02T00:00:00Z"),
        _cluster("team", "a", catalog="local", created="2024-01-03T00:00:00Z"),
        _cluster("team", "c", created="2024-01-01T00:00:00Z"),
        _cluster("team", "other", app="spark"),
        _cluster("elsewhere", "x", catalog="local"),
    ]
    assert _refs(clusters) == ["team/c", "team/b", "team/a"]
    assert denial(_refs(clusters)) == (
        "\nKubeDirectorApp resource cannot be deleted or modified while referenced by the following "
        "KubeDirectorCluster resources: team/c, team/b, team/a"
    )


def test_system_catalog_clusters_reference_the_app_in_kubedirectors_namespace() -> None:
    clusters = [_cluster("team", "explicit", catalog="system"), _cluster("other", "defaulted")]
    assert _refs(clusters, ns="kubedirector", apps=("kubedirector",)) == ["other/defaulted", "team/explicit"]
    assert _refs(clusters, ns="team") == []  # "system" points at KD's namespace, not the cluster's


def test_a_cluster_kubedirector_has_released_no_longer_references() -> None:
    deleting = {"deletionTimestamp": "2024-01-05T00:00:00Z"}
    held = _cluster("team", "held", finalizers=["kubedirector.hpe.com/cleanup"], **deleting)
    released = _cluster("team", "released", finalizers=["someone-else/keep"], **deleting)
    assert _refs([held, released]) == ["team/held"]


def _with(**changes: Any) -> dict[str, Any]:
    spec = copy.deepcopy(HELLO)
    spec.update(changes)
    return spec


@pytest.mark.parametrize(
    "new",
    [
        pytest.param(_with(version="2.0.0"), id="version"),
        pytest.param(_with(defaultImageRepoTag="gitops-kd/hello:2.0.0"), id="default-image"),
        pytest.param(_with(roles=[{"id": "controller", "cardinality": "1"}]), id="roles"),
        pytest.param(_with(defaultMaxLogSizeDump=256), id="defaultMaxLogSizeDump-kept-in-memory-by-KD"),
        pytest.param(_with(defaultPersistDirs=[]), id="persistDirs-empty-is-not-nil"),
    ],
)
def test_spec_changes_kubedirector_counts(new: dict[str, Any]) -> None:
    assert spec_changed(HELLO, new)


@pytest.mark.parametrize(
    "new",
    [
        pytest.param(_with(), id="same"),
        pytest.param(_with(upgrade={"roleOrder": ["worker"]}), id="field-KD-does-not-decode"),
        pytest.param(_with(capabilities=[], logoURL="", systemdRequired=False), id="zero-values"),
        pytest.param(_with(defaultConfigPackage=None), id="defaultConfigPackage-ignored"),
        pytest.param(
            _with(
                defaultImageRepoTag=None,
                defaultPersistDirs=None,
                roles=[
                    {
                        "id": "controller",
                        "cardinality": "1",
                        "imageRepoTag": "gitops-kd/hello:1.0.0",
                        "persistDirs": ["/var/lib/hello", "/opt/hello/cache"],
                        "configPackage": None,
                        "maxLogSizeDump": 256,
                    },
                    {
                        "id": "worker",
                        "cardinality": "1+",
                        "imageRepoTag": "gitops-kd/hello:1.0.0",
                        "persistDirs": ["/var/lib/hello", "/opt/hello/cache"],
                    },
                ],
            ),
            id="defaults-folded-into-roles",
        ),
    ],
)
def test_edits_kubedirector_does_not_count(new: dict[str, Any]) -> None:
    assert not spec_changed(HELLO, new)


def test_quantities_compare_by_value() -> None:
    old = _with(roles=[{"id": "controller", "cardinality": "1", "minResources": {"memory": "1Gi"}}])
    assert not spec_changed(old, _with(roles=[{"id": "controller", "cardinality": "1", "minResources": {"memory": "1024Mi"}}]))
    assert spec_changed(old, _with(roles=[{"id": "controller", "cardinality": "1", "minResources": {"memory": "2Gi"}}]))
