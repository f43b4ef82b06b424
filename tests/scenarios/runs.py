"""`gitops-kd run` processes in a scenario's world, on either backend: as the controller's identity (the gitops-kd
ServiceAccount's token on the real backend, a token the embedded server names it by), its system namespace
clean of the Lease and source record an earlier test on the same control plane left."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.deploy.test_rbac import SA_USER, SYSTEM_NS
from tests.e2e.harness import E2E

LEASE = "coordination.k8s.io/v1", "leases"
SOURCES = "gitops-kd.io/v1alpha1", "gitopskdsources"


def controller_kubeconfig(world: E2E, folder: Path) -> Path:
    """A kubeconfig that authenticates as the gitops-kd ServiceAccount of deploy/."""
    from tests.real.world import RealBackend

    if isinstance(world.backend, RealBackend):
        return world.backend.controller_kubeconfig
    return token_kubeconfig(world.cluster, folder / "sa.kubeconfig", SA_USER)


def clean_system_namespace(world: E2E) -> None:
    """gitops-kd-system exists, without the Lease and GitOpsKDSource `gitops-kd` (one control plane serves a
    whole session on the real backend)."""
    if world.rest.get_or_none("v1", "namespaces", None, SYSTEM_NS) is None:
        world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
    for api, plural in (LEASE, SOURCES):
        if world.rest.get_or_none(api, plural, SYSTEM_NS, "gitops-kd") is not None:
            world.rest.delete(api, plural, SYSTEM_NS, "gitops-kd")


def start_run(world: E2E, folder: Path, name: str, *extra: str) -> RunProcess:
    """`gitops-kd run` on the world's repo and namespace as the gitops-kd ServiceAccount (its own process)."""
    return RunProcess(
        name,
        folder,
        controller_kubeconfig(world, folder),
        str(world.repo),
        "--namespace",
        world.ns,
        *extra,
        env={"POD_NAMESPACE": SYSTEM_NS},
    )


def kubectl_apply(world: E2E, *docs: dict[str, Any]) -> None:
    """`kubectl apply` of `docs` as the admin (objects name their own namespace)."""
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(world.backend.kubeconfig), "apply", "-f", "-"],
        input=yaml.safe_dump_all(docs),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
