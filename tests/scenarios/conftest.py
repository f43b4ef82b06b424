"""`world`: the e2e harness on the backend --backend names. embedded: a fresh embedded cluster per test; real:
a namespace on the session's real control plane, deploy/ applied, the controller as its ServiceAccount,
`gitops-kd sim node` and `sim kubedirector` joined once per session (a 403 to the controller fails the test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kdsim.images import ImageStore
from tests.e2e.harness import E2E, add_hello_images
from tests.real.controlplane import ControlPlane
from tests.simnode import SimProcess, node_args


@pytest.fixture(scope="session")
def sim_joined(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The real control plane with the simulated node (the hello images in its store) and KubeDirector joined."""
    cp: ControlPlane = request.getfixturevalue("real_cp")
    request.getfixturevalue("gitops_kd_kubeconfig")  # CRDs and deploy/ applied
    assert cp.pki is not None
    folder = tmp_path_factory.mktemp("sim-joined")
    add_hello_images(ImageStore(folder / "node" / "images"))
    node = node_args(cp.kubeconfig, folder / "node", "--tls-cert-file", str(cp.pki.kubelet_serving.cert),
                     "--tls-private-key-file", str(cp.pki.kubelet_serving.key), "--client-ca-file", str(cp.pki.ca.cert))
    with SimProcess(node, folder / "node.log"), \
            SimProcess(["kubedirector", "--kubeconfig", str(cp.kubeconfig), "--no-install-crds"], folder / "kd.log"):
        yield cp


@pytest.fixture
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[E2E]:
    if request.config.getoption("--backend") == "embedded":
        e2e = E2E(tmp_path)
        try:
            yield e2e
        finally:
            e2e.close()
        return
    from tests.real.world import RealBackend
    cp = request.getfixturevalue("sim_joined")
    backend = RealBackend(cp, request.getfixturevalue("gitops_kd_kubeconfig"))
    e2e = E2E(tmp_path, backend=backend)
    try:
        yield e2e
        forbidden = backend.forbidden()
        assert not forbidden, f"the controller (gitops-kd ServiceAccount) was refused: {forbidden}; " \
                              f"audit log {cp.audit_log}"
    finally:
        e2e.close()
