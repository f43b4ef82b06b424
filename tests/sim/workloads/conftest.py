"""Fixtures for the embedded node tests: one EmbeddedCluster per module, a fresh namespace per test."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import pytest
from kubernetes import client

from kdsim.cluster import EmbeddedCluster

_counter = itertools.count()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(tmp_path_factory.mktemp("cluster")) as c:
        yield c


@pytest.fixture
def namespace(cluster: EmbeddedCluster) -> str:
    name = f"t{next(_counter)}-{int(time.time() * 1000) % 100000}"
    client.CoreV1Api(cluster.api_client()).create_namespace({"metadata": {"name": name}})
    return name


@pytest.fixture
def core(cluster: EmbeddedCluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.api_client())


@pytest.fixture
def apps(cluster: EmbeddedCluster) -> client.AppsV1Api:
    return client.AppsV1Api(cluster.api_client())
