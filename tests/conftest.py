"""Shared pytest fixtures: the KubeDirector example data that travels with the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

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
BACKENDS = ("embedded", "real", "kd", "kd-upgrade")
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
        "live-app-upgrade branch, built by scripts/realkd)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "real: runs against a real control plane; selected by --backend=real")
    config.addinivalue_line("markers", "kd: runs against the real KubeDirector; selected by --backend=kd|kd-upgrade")
    config.addinivalue_line("markers", "backends: runs on whichever backend --backend names (fixture `world`)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--backend=real keeps just the `real` tests; the default backend keeps all the others. Tests marked
    `backends` run on both; on the real backend they and the other users of `sim_joined` run last."""
    backend = config.getoption("--backend")
    want_real, want_kd = backend == "real", backend in ("kd", "kd-upgrade")
    keep = [
        item
        for item in items
        if item.get_closest_marker("backends") is not None
        or (
            (item.get_closest_marker("kd") is not None)
            if want_kd
            else item.get_closest_marker("kd") is None and (item.get_closest_marker("real") is not None) == want_real
        )
    ]
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

    capture = session.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        binaries(show_progress=True)
        if backend != "real":
            build()
