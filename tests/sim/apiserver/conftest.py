"""Fixtures: one EmbeddedCluster (no controllers) per test session, plus kubectl and client helpers."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator

import kubernetes.client
import pytest
from apiserver_util import Kubectl

from kdsim.cluster import EmbeddedCluster
from tests.kdcluster import embedded_cluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with embedded_cluster(tmp_path_factory.mktemp("apiserver-state"), controllers=False, bookmark_interval=0.5) as c:
        yield c


@pytest.fixture(scope="session")
def api(cluster: EmbeddedCluster) -> Iterator[kubernetes.client.ApiClient]:
    client = cluster.api_client()
    yield client
    client.close()


@pytest.fixture()
def ns(api: kubernetes.client.ApiClient) -> str:
    """A fresh namespace per test."""
    name = "t-" + uuid.uuid4().hex[:8]
    kubernetes.client.CoreV1Api(api).create_namespace({"metadata": {"name": name}})
    return name


@pytest.fixture(scope="session")
def kubectl(cluster: EmbeddedCluster) -> Kubectl:
    def run(*args: str, input: str | None = None, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["kubectl", "--kubeconfig", str(cluster.kubeconfig), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run
