"""Shared pytest fixtures: the KubeDirector example data that travels with the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.real.session import (  # noqa: F401 - fixtures by name
    gitops_kd_kubeconfig,
    real_cp,
    real_ns,
    real_rest,
    real_world,
    sim_joined,
)

ROOT = Path(__file__).resolve().parent.parent
KD_DATA = Path(__file__).resolve().parent / "data" / "kubedirector"


@pytest.fixture(scope="session")
def kd_shared() -> Path:
    """The folder with KubeDirector's example catalog (KDApps) and example clusters (KDClusters)."""
    return KD_DATA


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", choices=("embedded", "real"), default="embedded",
                     help="embedded (default): the usual suite; real: only the tests marked `real`, against a real "
                          "kube-apiserver + kube-controller-manager built by scripts/realk8s")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "real: runs against a real control plane; selected by --backend=real")
    config.addinivalue_line("markers", "backends: runs on whichever backend --backend names (fixture `world`)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--backend=real keeps just the `real` tests; the default backend keeps all the others. Tests marked
    `backends` run on both; on the real backend they and the other users of `sim_joined` run last."""
    want_real = config.getoption("--backend") == "real"
    keep = [item for item in items if item.get_closest_marker("backends") is not None
            or (item.get_closest_marker("real") is not None) == want_real]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in keep])
        items[:] = keep
    if want_real:  # the session's joined node and KubeDirector (sim_joined) run from their first user to the end:
        # the tests that join their own (tests/real/test_sim_node.py, same Node name) go before it starts
        items.sort(key=lambda item: item.get_closest_marker("backends") is not None
                   or "sim_joined" in getattr(item, "fixturenames", ()))


def pytest_collection_finish(session: pytest.Session) -> None:
    """With --backend=real, build (first run, minutes, progress shown) or find the binaries before any test's
    timeout starts."""
    if session.config.getoption("--backend") != "real" or not session.items:
        return
    from tests.real.controlplane import binaries
    capture = session.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        binaries(show_progress=True)
