"""Fixtures for the real backend: one loopback control plane per session, deploy/ applied, a namespace per test.
Registered for the whole suite by tests/conftest.py, so tests/real and tests/scenarios share one control plane."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kubernetes import client

from kdsim.images import ImageStore
from kubeplumb.rest import RestClient
from tests.e2e.harness import E2E, add_hello_images
from tests.real.controlplane import CONTROLLERS, CRD_FILES, PV_BINDER, ROOT, ControlPlane
from tests.real.kubeconfig import write_kubeconfig
from tests.real.kubedirector import FLAVOURS, NODE_BACKENDS, RealKubeDirector, default_storage_class
from tests.simnode import SimProcess, node_args


@pytest.fixture(scope="session")
def real_cp(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver + kube-controller-manager v1.20.2 (with the persistentvolume-binder on the real-node
    backends), stopped at the end of the session."""
    node = str(request.config.getoption("--backend")) in NODE_BACKENDS
    with ControlPlane(
        tmp_path_factory.mktemp("realk8s"), controllers=f"{CONTROLLERS},{PV_BINDER}" if node else CONTROLLERS
    ) as cp:
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
def gitops_kd_kubeconfig(request: pytest.FixtureRequest, real_cp: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """install_gitops_kd on the session's control plane."""
    return install_gitops_kd(real_cp, tmp_path_factory.mktemp("gitops-kd-sa"), real_kd=real_kd_backend(request.config))


def install_gitops_kd(cp: ControlPlane, folder: Path, *, real_kd: bool) -> Path:
    """The packaged CRDs (gitops-kd's own only, when a real KubeDirector installs its CRDs: ``real_kd``) and `kubectl
    apply -k deploy/` applied; a kubeconfig (in ``folder``) with the gitops-kd ServiceAccount's token (a token
    Secret the token controller fills, on every version)."""
    for crd in CRD_FILES:
        if real_kd and crd.name.startswith("kubedirector.hpe.com_"):
            continue
        cp.kubectl("apply", "-f", str(crd))
    cp.kubectl("apply", "-k", str(ROOT / "deploy"))
    assert cp.pki is not None
    return write_kubeconfig(
        folder / "kubeconfig", cp.server, cp.pki.ca.cert, token=cp.service_account_token("gitops-kd-system", "gitops-kd")
    )


@pytest.fixture(scope="session")
def sim_joined(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The real control plane with the simulated node and KubeDirector joined (join_sim), until the session ends.
    Tests that join a node or KubeDirector of their own run before its first user (tests/conftest.py orders
    them): two nodes named sim-node would take turns at the Node's kubelet endpoint."""
    cp: ControlPlane = request.getfixturevalue("real_cp")
    request.getfixturevalue("gitops_kd_kubeconfig")  # CRDs and deploy/ applied
    with join_sim(cp, tmp_path_factory.mktemp("sim-joined")):
        yield cp


@contextmanager
def join_sim(cp: ControlPlane, folder: Path) -> Iterator[None]:
    """A default StorageClass, and the simulated node (the hello images in its store) and KubeDirector joined to
    ``cp`` (gitops-kd's CRDs applied) while the context lasts."""
    default_storage_class(cp)
    with (
        SimProcess(_node(cp, folder), folder / "node.log"),
        SimProcess(["kubedirector", "--kubeconfig", str(cp.kubeconfig), "--no-install-crds"], folder / "kd.log"),
    ):
        yield


def _node(cp: ControlPlane, folder: Path) -> list[str]:
    """`gitops-kd sim node` arguments for `cp`, the hello images in its store."""
    assert cp.pki is not None
    add_hello_images(ImageStore(folder / "node" / "images"))
    return node_args(
        cp.kubeconfig,
        folder / "node",
        "--tls-cert-file",
        str(cp.pki.kubelet_serving.cert),
        "--tls-private-key-file",
        str(cp.pki.kubelet_serving.key),
        "--client-ca-file",
        str(cp.pki.ca.cert),
    )


@pytest.fixture(scope="session")
def kd_joined(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKubeDirector]:
    """The real control plane with the real KubeDirector of --backend's flavour (its CRDs, RBAC and webhook) and
    the simulated node as the only kubelet, until the session ends."""
    cp: ControlPlane = request.getfixturevalue("real_cp")
    with join_kd(
        cp,
        str(request.config.getoption("--backend")),
        tmp_path_factory.mktemp("kd-joined"),
        lambda: request.getfixturevalue("gitops_kd_kubeconfig"),
    ) as (kd, _kubeconfig):
        yield kd


@contextmanager
def join_kd(cp: ControlPlane, backend: str, folder: Path, install: Callable[[], Path]) -> Iterator[tuple[RealKubeDirector, Path]]:
    """The real KubeDirector of ``backend``'s flavour (its CRDs, RBAC and webhook) on ``cp``, then gitops-kd
    (``install()``: its CRDs and deploy/, the controller's kubeconfig) and the simulated node as the only kubelet,
    while the context lasts."""
    with RealKubeDirector(cp, backend, folder / "kubedirector") as kd:
        kubeconfig = install()
        with SimProcess(_node(cp, folder), folder / "node.log"):
            yield kd, kubeconfig


@pytest.fixture
def kd_world(kd_joined: RealKubeDirector, gitops_kd_kubeconfig: Path, tmp_path: Path) -> Iterator[E2E]:
    """The e2e harness on a real KubeDirector backend; a 403 to the controller fails the test."""
    with world_on(kd_joined.cp, gitops_kd_kubeconfig, tmp_path, kd_joined.backend) as world:
        yield world


@pytest.fixture
def real_world(sim_joined: ControlPlane, gitops_kd_kubeconfig: Path, tmp_path: Path) -> Iterator[E2E]:
    """The e2e harness on the real backend (tests/real/world.py); a 403 to the controller fails the test."""
    with world_on(sim_joined, gitops_kd_kubeconfig, tmp_path, "real") as world:
        yield world


@contextmanager
def backend_up(backend: str, folder: Path) -> Iterator[tuple[ControlPlane, Path]]:
    """A real backend (real, kd, kd-upgrade) outside pytest, brought up as its session fixtures do: a new control
    plane, gitops-kd installed, the simulated node and KubeDirector (real: the simulated one) joined. Yields the
    control plane and the controller's kubeconfig (for world_on)."""
    with ControlPlane(folder / "realk8s") as cp:
        if backend == "real":
            kubeconfig = install_gitops_kd(cp, folder, real_kd=False)
            with join_sim(cp, folder / "sim"):
                yield cp, kubeconfig
        else:
            with join_kd(cp, backend, folder / "kd", lambda: install_gitops_kd(cp, folder, real_kd=True)) as (_kd, kc):
                yield cp, kc


@contextmanager
def world_on(cp: ControlPlane, kubeconfig: Path, tmp_path: Path, name: str) -> Iterator[E2E]:
    """The e2e harness in a new namespace of ``cp`` (tests/real/world.py), the controller as ``kubeconfig`` says;
    a 403 to the controller fails."""
    from tests.real.world import RealBackend

    backend = RealBackend(cp, kubeconfig, name)
    world = E2E(tmp_path, backend=backend)
    try:
        yield world
        forbidden = backend.forbidden()
        assert not forbidden, f"the controller (gitops-kd ServiceAccount) was refused: {forbidden}; audit log {cp.audit_log}"
    finally:
        world.close()
