"""HA helpers: two `gitops-kd run` replicas on one embedded cluster and one repo, the Lease's holder and times.
The failover scenario itself (leader SIGKILLed mid-upgrade) runs on both backends: tests/scenarios/test_failover.py."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from gitops_kd.constants import LEASE_RETRY_PERIOD
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.e2e.harness import E2E, NS, hello_app

SYSTEM_NS = "gitops-kd-system"
RETRY_PERIOD = LEASE_RETRY_PERIOD  # the defaults, what `gitops-kd run` uses here
HOOK = {"command": ["/bin/sh", "-c", 'echo "upgraded-to-2.0.0 $(hostname)" >> /var/lib/hello/upgrade.log'], "timeoutSeconds": 60}


def app_with_appending_hook() -> str:
    import yaml

    doc = yaml.safe_load(hello_app("2.0.0"))
    doc["spec"]["upgrade"]["hooks"]["postUpgrade"] = HOOK
    return yaml.safe_dump(doc, sort_keys=False)


def lease_holder(world: E2E) -> str:
    """holderIdentity of the controller's Lease (wherever --leader-elect put it), "" when none."""
    items = world.rest.list("coordination.k8s.io/v1", "leases", None)["items"]
    holders = [(i["spec"] or {}).get("holderIdentity") or "" for i in items if i["metadata"]["name"] == "gitops-kd"]
    assert len(holders) <= 1, holders
    return holders[0] if holders else ""


def lease_time(world: E2E, field: str) -> datetime:
    """A MicroTime field of the controller's Lease (renewTime, acquireTime)."""
    items = world.rest.list("coordination.k8s.io/v1", "leases", None)["items"]
    spec = next(i["spec"] for i in items if i["metadata"]["name"] == "gitops-kd")
    return datetime.fromisoformat(spec[field].replace("Z", "+00:00"))


def leader_of(world: E2E, procs: list[RunProcess]) -> RunProcess | None:
    holder = lease_holder(world)
    found = [p for p in procs if holder.startswith(p.name + "_")]
    return found[0] if found else None


def events(world: E2E, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in world.rest.list("v1", "events", world.ns)["items"]
        if e["involvedObject"].get("name") == "hello-dev" and e.get("reason") == reason
    ]


def token_of(name: str) -> str:
    """The bearer token replica ``name`` of start_replicas presents: the API server's access log user for it."""
    return f"gitops-kd-sa-{name}"  # tokens are not checked: a token is how the embedded server tells clients apart


def start_replicas(world: E2E, tmp_path: Path, procs: list[RunProcess], *extra: str) -> None:
    """Two `gitops-kd run --leader-elect` replicas (appended to ``procs``) on ``world``, as its ServiceAccount,
    each with its own token (token_of) so the API server's access log tells their requests apart."""
    world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
    for name in ("replica-a", "replica-b"):
        kubeconfig = token_kubeconfig(world.cluster, tmp_path / f"{name}.kubeconfig", token_of(name))
        procs.append(
            RunProcess(
                name,
                tmp_path,
                kubeconfig,
                str(world.repo),
                "--namespace",
                NS,
                "--leader-elect",
                *extra,
                env={"POD_NAMESPACE": SYSTEM_NS},
            )
        )
