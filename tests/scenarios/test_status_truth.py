"""What status says is what the cluster knows (issue 42), unchanged on the embedded cluster and the real KubeDirector
(--backend=kd): HEALTH on a cluster without a load-balancer provider says why KubeDirector's LoadBalancer member
Services keep it Progressing and `--loadbalancer-health=ignore` counts them Healthy."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import E2E, wait_for

pytestmark = pytest.mark.backends
GITOPS_KD = str(Path(sys.executable).parent / "gitops-kd")


@pytest.fixture
def bare(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[E2E]:
    """A world without a load-balancer provider: the embedded cluster without its loopback servicelb, or the real
    control plane (it has none)."""
    backend = request.config.getoption("--backend")
    if backend != "embedded":
        yield request.getfixturevalue("real_world" if backend == "real" else "kd_world")
        return
    e2e = E2E(tmp_path, load_balancer=False)
    try:
        yield e2e
    finally:
        e2e.close()


def status(world: E2E, *args: str) -> subprocess.CompletedProcess[str]:
    """`gitops-kd status` as a user runs it against the world's cluster."""
    return subprocess.run(
        [GITOPS_KD, "status", "--kubeconfig", str(world.backend.kubeconfig), "--namespace", world.ns, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def status_json(world: E2E, *args: str) -> dict[str, Any]:
    out = status(world, "hello-dev", "-o", "json", *args)
    assert out.returncode in (0, 1), out.stderr
    found: dict[str, Any] = json.loads(out.stdout)
    return found


def test_loadbalancer_services_without_a_provider_say_why_and_can_be_ignored(bare: E2E) -> None:
    """Invariant: HEALTH never hides why it is not Healthy. Without a load-balancer provider KubeDirector's default
    LoadBalancer member Services never get an ingress: HEALTH stays Progressing (as Argo CD counts them) naming the
    Service, the cause and the two ways out; with --loadbalancer-health=ignore the same cluster is Healthy, and
    those Services say they are counted so."""
    bare.start_controller()
    bare.wait_ready_at("1.0.0", timeout=180)
    bare.wait_settled(timeout=120)
    lbs = [
        s["metadata"]["name"]
        for s in bare.rest.list("v1", "services", bare.ns, label_selector="kubedirector.hpe.com/kdcluster=hello-dev")["items"]
        if s["spec"].get("type") == "LoadBalancer"
    ]
    assert lbs, "hello's member Services are KubeDirector's default type, LoadBalancer"

    def on_services() -> dict[str, Any] | None:
        said = status_json(bare)
        return said if said["message"].startswith("Service ") else None

    said = wait_for("HEALTH to speak of the Services", on_services, 60)
    assert said["status"] == "Progressing", said
    for words in ("load-balancer provider", "spec.serviceType", "--loadbalancer-health=ignore"):
        assert words in said["message"], said["message"]
    table = status(bare)
    assert table.returncode == 0, table.stdout + table.stderr
    assert "Progressing" in table.stdout and "load-balancer provider" in table.stdout, table.stdout

    ignored = status_json(bare, "--loadbalancer-health", "ignore")
    assert ignored["status"] == "Healthy", ignored
    services = {o["name"]: o for o in ignored["objects"] if o["kind"] == "Service"}
    assert all(services[name]["status"] == "Healthy" for name in lbs), services
    assert all("--loadbalancer-health=ignore" in services[name]["message"] for name in lbs), services
