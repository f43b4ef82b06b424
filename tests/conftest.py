"""Shared pytest fixtures: the KubeDirector example data that travels with the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real.nodesession import node_joined, node_world  # noqa: F401 - fixtures by name
from tests.real.session import (  # noqa: F401 - fixtures by name
    gitops_kd_kubeconfig,
    kd_joined,
    kd_world,
    real_cp,
    real_ns,
    real_rest,
    real_world,
    sim_joined,
)

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ("embedded", "real", "kd", "kd-upgrade", "kd-node", "node")
KD_DATA = Path(__file__).resolve().parent / "data" / "kubedirector"


@pytest.fixture(scope="session")
def kd_shared() -> Path:
    """The folder with KubeDirector's example catalog (KDApps) and example clusters (KDClusters)."""
    return KD_DATA


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=BACKENDS,
        default="embedded",
        help="embedded (default): the usual suite; real: only the tests marked `real`, against a real "
        "kube-apiserver + kube-controller-manager built by scripts/realk8s; kd / kd-upgrade: the "
        "tests marked `kd`, on that control plane with the real KubeDirector (stock master / its "
        "live-app-upgrade branch, built by scripts/realkd); kd-node / node: the tests marked `node` and the "
        "scenarios, on that control plane with a real node (kubelet + containerd, scripts/realnode) and the real "
        "stock KubeDirector / the embedded KubeDirector simulation",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "real: runs against a real control plane; selected by --backend=real")
    config.addinivalue_line("markers", "kd: runs against the real KubeDirector; selected by --backend=kd|kd-upgrade")
    config.addinivalue_line("markers", "node: runs on a real node; selected by --backend=kd-node|node")
    config.addinivalue_line("markers", "backends: runs on whichever backend --backend names (fixture `world`)")


def _selected(item: pytest.Item, backend: str) -> bool:
    """Whether --backend=``backend`` runs ``item``: `backends` tests everywhere; `node` tests on the real-node
    backends, `kd` tests on kd|kd-upgrade, `real` tests on real, all the other tests on embedded."""
    marked = {name for name in ("backends", "node", "kd", "real") if item.get_closest_marker(name) is not None}
    if "backends" in marked:
        return True
    if backend in ("kd-node", "node"):
        return "node" in marked
    if backend in ("kd", "kd-upgrade"):
        return "kd" in marked
    return not marked & {"node", "kd"} and ("real" in marked) == (backend == "real")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the tests --backend selects (_selected). On the real backend the tests marked `backends` and the other
    users of `sim_joined` run last."""
    backend = str(config.getoption("--backend"))
    want_real = backend == "real"
    keep = [item for item in items if _selected(item, backend)]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in keep])
        items[:] = keep
    if want_real:  # the session's joined node and KubeDirector (sim_joined) run from their first user to the end:
        # the tests that join their own (tests/real/test_sim_node.py, same Node name) go before it starts
        items.sort(
            key=lambda item: item.get_closest_marker("backends") is not None or "sim_joined" in getattr(item, "fixturenames", ())
        )


def pytest_collection_finish(session: pytest.Session) -> None:
    """With --backend=real, build (first run, minutes, progress shown) or find the binaries before any test's
    timeout starts."""
    backend = session.config.getoption("--backend")
    if backend == "embedded" or not session.items:
        return
    from tests.real.controlplane import binaries
    from tests.real.kubedirector import build
    from tests.real.realnode import node_tools

    capture = session.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        binaries(show_progress=True)
        if backend not in ("real", "node"):
            build()
        if backend in ("kd-node", "node"):
            node_tools(show_progress=True)
