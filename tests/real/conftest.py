"""Fixtures for the real backend: one loopback control plane per session, a fresh namespace per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client

from gitops_kd.kube.rest import RestClient
from tests.real.controlplane import ControlPlane


@pytest.fixture(scope="session")
def real_cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver + kube-controller-manager v1.20.2, stopped at the end of the session."""
    with ControlPlane(tmp_path_factory.mktemp("realk8s")) as cp:
        yield cp


@pytest.fixture
def real_ns(real_cp: ControlPlane) -> Iterator[str]:
    """A new namespace, deleted afterwards (the namespace controller empties it)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(real_cp.api_client())
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


@pytest.fixture
def real_rest(real_cp: ControlPlane) -> RestClient:
    """gitops-kd's own RestClient as the admin."""
    return RestClient(real_cp.api_client())
