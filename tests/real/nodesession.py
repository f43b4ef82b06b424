"""Fixtures for the real-node backends (docs/real-node.md): kd-node (the real control plane, the real stock
KubeDirector, the real kubelet) and node (the same with the embedded KubeDirector simulation): one node per
session, the hello images imported into its containerd, its scheduler/provisioner agent running."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubeplumb.rest import RestClient
from tests.e2e.harness import E2E
from tests.real.controlplane import ControlPlane
from tests.real.kubedirector import NODE_BACKENDS, RealKubeDirector, default_storage_class
from tests.real.nodeagent import NodeAgent
from tests.real.realnode import RealNode
from tests.real.session import install_gitops_kd, world_on
from tests.simnode import SimProcess

__all__ = ["NODE_BACKENDS", "NodeBackend", "node_backend_up", "node_joined", "node_world"]


@dataclass
class NodeBackend:
    """A real-node backend up: its control plane, node, the controller's kubeconfig and the backend's name."""

    cp: ControlPlane
    node: RealNode
    kubeconfig: Path
    name: str


@contextmanager
def node_backend_up(cp: ControlPlane, backend: str, folder: Path) -> Iterator[NodeBackend]:
    """On ``cp`` (with the persistentvolume-binder): KubeDirector (kd-node: the real stock one; node: `gitops-kd
    sim kubedirector`), gitops-kd installed, a default StorageClass, the real node and its agent, while the context
    lasts; everything of the node is gone after."""
    with ExitStack() as stack:
        if backend == "kd-node":
            stack.enter_context(RealKubeDirector(cp, backend, folder / "kubedirector"))
            kubeconfig = install_gitops_kd(cp, folder, real_kd=True)
        else:
            kubeconfig = install_gitops_kd(cp, folder, real_kd=False)
            default_storage_class(cp)
            stack.enter_context(
                SimProcess(["kubedirector", "--kubeconfig", str(cp.kubeconfig), "--no-install-crds"], folder / "kd.log")
            )
        node = stack.enter_context(RealNode(cp, folder / "node"))
        stack.enter_context(NodeAgent(RestClient(cp.api_client()), node.name, node.storage))
        yield NodeBackend(cp, node, kubeconfig, backend)


@pytest.fixture(scope="session")
def node_joined(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeBackend]:
    """The session's real-node backend (--backend=kd-node|node), until the session ends."""
    cp: ControlPlane = request.getfixturevalue("real_cp")
    with node_backend_up(cp, str(request.config.getoption("--backend")), tmp_path_factory.mktemp("node-joined")) as up:
        yield up


@pytest.fixture
def node_world(node_joined: NodeBackend, tmp_path: Path) -> Iterator[E2E]:
    """The e2e harness on the real-node backend; a 403 to the controller fails the test."""
    with world_on(node_joined.cp, node_joined.kubeconfig, tmp_path, node_joined.name) as world:
        yield world
