"""Fixtures for the embedded node tests: one EmbeddedCluster per module, a fresh namespace per test."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import pytest
from kubernetes import client
from workloads_util import statefulset, sts_ready, wait_for

from kdsim.cluster import EmbeddedCluster
from kdsim.images import store_for

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


@pytest.fixture(scope="module")
def tools_pod(cluster: EmbeddedCluster) -> tuple[str, str]:
    """(namespace, pod) of a running single-container pod of image example.com/tools:3."""
    store_for(cluster).add("example.com/tools:3", {"/etc/tools/motd": "hello from tools\n"})
    client.CoreV1Api(cluster.api_client()).create_namespace({"metadata": {"name": "spdy"}})
    apps = client.AppsV1Api(cluster.api_client())
    apps.create_namespaced_stateful_set("spdy", statefulset("sh", replicas=1, image="example.com/tools:3"))
    wait_for(sts_ready(apps, "spdy", "sh", 1))
    return "spdy", "sh-0"
