"""`world`: the e2e harness on the backend --backend names. embedded: a fresh embedded cluster per test; real:
`real_world` (tests/real/session.py): a namespace on the session's real control plane, deploy/ applied, the
controller as its ServiceAccount, `gitops-kd sim node` and `sim kubedirector` joined once per session (a 403 to
the controller fails the test); kd, kd-upgrade: `kd_world`, the same with the real KubeDirector (stock, or its
live-app-upgrade branch) in place of `sim kubedirector`; kd-node, node: `node_world` (tests/real/nodesession.py),
a real node (kubelet + containerd) in place of `sim node`, with the real stock KubeDirector / `sim kubedirector`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import E2E


@pytest.fixture
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[E2E]:
    if request.config.getoption("--backend") == "embedded":
        e2e = E2E(tmp_path)
        try:
            yield e2e
        finally:
            e2e.close()
        return
    backend = request.config.getoption("--backend")
    fixture = {"real": "real_world", "kd-node": "node_world", "node": "node_world"}.get(backend, "kd_world")
    yield request.getfixturevalue(fixture)
