"""The kubectl compatibility table in docs/embedded-cluster.md holds for the oldest and newest kubectl on the
machine: each command of tests.kubectl_matrix is run with both against an embedded cluster with a running pod,
and each documented cell must be what was measured (regenerate with scripts/kubectl-matrix --write)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kdsim.cluster import EmbeddedCluster
from tests import kubectl_matrix as matrix


@pytest.fixture(scope="module")
def node_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(tmp_path_factory.mktemp("matrix")) as cluster:
        yield cluster


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_the_documented_kubectl_matrix_holds(node_cluster: EmbeddedCluster, version: str, tmp_path: Path) -> None:
    if not (matrix.SDK / f"kubectl.{version}").exists():
        pytest.fail(f"kubectl {version} is missing under {matrix.SDK} (google-cloud-sdk's kubectl packages)")
    measured = matrix.measure(node_cluster, version, tmp_path)
    documented = matrix.documented().get(version)
    assert documented is not None, f"docs/embedded-cluster.md has no kubectl {version} column: scripts/kubectl-matrix --write"
    assert documented == measured, "the kubectl table differs from what kubectl does: scripts/kubectl-matrix --write"
    # what the embedded cluster is for works on every version
    for command in (
        "get",
        "describe pod",
        "create configmap",
        "apply",
        "diff",
        "edit (KUBE_EDITOR)",
        "explain",
        "logs",
        "exec",
        "exec -i (stdin)",
        "cp",
        "port-forward",
        "auth can-i",
        "auth whoami",
        "delete",
    ):
        assert measured[command], f"kubectl {version} {command} fails against the embedded cluster"
