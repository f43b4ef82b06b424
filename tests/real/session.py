"""Fixtures for the real backend: one loopback control plane per session, deploy/ applied, a namespace per test.
Registered for the whole suite by tests/conftest.py, so tests/real and tests/scenarios share one control plane."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from gitops_kd.testing import wait_for
from kdsim.images import ImageStore
from kubeplumb.rest import RestClient
from tests.e2e.harness import E2E, add_hello_images
from tests.real.controlplane import CRD_FILES, ROOT, ControlPlane
from tests.real.kubeconfig import write_kubeconfig
from tests.real.kubedirector import FLAVOURS, RealKubeDirector, default_storage_class
from tests.simnode import SimProcess, node_args


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


def real_kd_backend(config: pytest.Config) -> bool:
    """True when --backend names a real KubeDirector (kd, kd-upgrade): KubeDirector installs its own CRDs."""
    return str(config.getoption("--backend")) in FLAVOURS


@pytest.fixture(scope="session")
def gitops_kd_kubeconfig(request: pytest.FixtureRequest, real_cp: ControlPlane,
                         tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged CRDs (gitops-kd's own only, when a real KubeDirector installs its CRDs) and `kubectl apply -k
    deploy/` applied; a kubeconfig with the gitops-kd ServiceAccount's token (k8s 1.20's token controller makes
    its Secret)."""
    for crd in CRD_FILES:
        if real_kd_backend(request.config) and crd.name.startswith("kubedirector.hpe.com_"):
            continue
        real_cp.kubectl("apply", "-f", str(crd))
    real_cp.kubectl("apply", "-k", str(ROOT / "deploy"))
    core = client.CoreV1Api(real_cp.api_client())

    def token() -> str | None:
        sa = core.read_namespaced_service_account("gitops-kd", "gitops-kd-system")
        for ref in sa.secrets or ():
            secret = core.read_namespaced_secret(ref.name, "gitops-kd-system")
            if secret.data and "token" in secret.data:
                return base64.b64decode(secret.data["token"]).decode()
        return None
    assert real_cp.pki is not None
    return write_kubeconfig(tmp_path_factory.mktemp("gitops-kd-sa") / "kubeconfig", real_cp.server,
                            real_cp.pki.ca.cert, token=wait_for("the gitops-kd ServiceAccount's token", token, 60))


@pytest.fixture(scope="session")
def sim_joined(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The real control plane with the simulated node (the hello images in its store) and KubeDirector joined,
    until the session ends. Tests that join a node or KubeDirector of their own run before its first user
    (tests/conftest.py orders them): two nodes named sim-node would take turns at the Node's kubelet endpoint."""
    cp: ControlPlane = request.getfixturevalue("real_cp")
    request.getfixturevalue("gitops_kd_kubeconfig")  # CRDs and deploy/ applied
    default_storage_class(cp)
    assert cp.pki is not None
    folder = tmp_path_factory.mktemp("sim-joined")
    add_hello_images(ImageStore(folder / "node" / "images"))
    with SimProcess(_node(cp, folder), folder / "node.log"), \
            SimProcess(["kubedirector", "--kubeconfig", str(cp.kubeconfig), "--no-install-crds"], folder / "kd.log"):
        yield cp


def _node(cp: ControlPlane, folder: Path) -> list[str]:
    """`gitops-kd sim node` arguments for `cp`, the hello images in its store."""
    assert cp.pki is not None
    add_hello_images(ImageStore(folder / "node" / "images"))
    return node_args(cp.kubeconfig, folder / "node", "--tls-cert-file", str(cp.pki.kubelet_serving.cert),
                     "--tls-private-key-file", str(cp.pki.kubelet_serving.key), "--client-ca-file", str(cp.pki.ca.cert))


@pytest.fixture(scope="session")
def kd_joined(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKubeDirector]:
    """The real control plane with the real KubeDirector of --backend's flavour (its CRDs, RBAC and webhook) and
    the simulated node as the only kubelet, until the session ends."""
    cp: ControlPlane = request.getfixturevalue("real_cp")
    folder = tmp_path_factory.mktemp("kd-joined")
    with RealKubeDirector(cp, str(request.config.getoption("--backend")), folder / "kubedirector") as kd:
        request.getfixturevalue("gitops_kd_kubeconfig")  # gitops-kd's CRDs and deploy/ applied
        with SimProcess(_node(cp, folder), folder / "node.log"):
            yield kd


@pytest.fixture
def kd_world(kd_joined: RealKubeDirector, gitops_kd_kubeconfig: Path, tmp_path: Path) -> Iterator[E2E]:
    """The e2e harness on a real KubeDirector backend; a 403 to the controller fails the test."""
    yield from _world(kd_joined.cp, gitops_kd_kubeconfig, tmp_path, kd_joined.backend)


@pytest.fixture
def real_world(sim_joined: ControlPlane, gitops_kd_kubeconfig: Path, tmp_path: Path) -> Iterator[E2E]:
    """The e2e harness on the real backend (tests/real/world.py); a 403 to the controller fails the test."""
    yield from _world(sim_joined, gitops_kd_kubeconfig, tmp_path, "real")


def _world(cp: ControlPlane, kubeconfig: Path, tmp_path: Path, name: str) -> Iterator[E2E]:
    from tests.real.world import RealBackend

    backend = RealBackend(cp, kubeconfig, name)
    world = E2E(tmp_path, backend=backend)
    try:
        yield world
        forbidden = backend.forbidden()
        assert not forbidden, f"the controller (gitops-kd ServiceAccount) was refused: {forbidden}; " \
                              f"audit log {cp.audit_log}"
    finally:
        world.close()
