"""Sharding by namespace: two `gitops-kd run` processes, one per namespace (--watch-namespace), each with its
own Lease, manage one repository on one cluster; each writes only in its own namespace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gitops_kd.controller.scope import shard_lease_name
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.e2e.harness import E2E, KD, ROLLOUT, hello_app

SYSTEM_NS = "gitops-kd-system"
SHARDS = {"shard-a": "team-a", "shard-b": "team-b"}  # process name (and bearer token) -> its namespace
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def _in(namespace: str, text: str) -> str:
    doc = yaml.safe_load(text)
    doc["metadata"]["namespace"] = namespace
    return yaml.safe_dump(doc, sort_keys=False)


def _ready_at(world: E2E, namespace: str, version: str) -> bool:
    ro = world.rest.get_or_none(ROLLOUT, "kdrollouts", namespace, "hello-dev")
    status = (ro or {}).get("status") or {}
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ())
    return ready and status.get("appVersion") == version


def _wait_all_ready_at(world: E2E, version: str, timeout: float) -> None:
    wait_for(
        f"hello-dev Ready at {version} in {', '.join(SHARDS.values())}",
        lambda: all(_ready_at(world, ns, version) for ns in SHARDS.values()),
        timeout,
    )


def _namespace(world: E2E, name: str) -> None:
    world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def _leases(world: E2E) -> dict[str, str]:
    """Lease name -> holderIdentity in the system namespace."""
    items = world.rest.list("coordination.k8s.io/v1", "leases", SYSTEM_NS)["items"]
    return {i["metadata"]["name"]: (i.get("spec") or {}).get("holderIdentity") or "" for i in items}


def test_two_shards_each_manage_only_their_namespace(tmp_path: Path) -> None:
    world = E2E(tmp_path)
    procs: dict[str, RunProcess] = {}
    try:
        for ns in (SYSTEM_NS, *SHARDS.values()):
            _namespace(world, ns)
        files: dict[str, str | None] = {"apps/hello.yaml": None, "clusters/hello-dev.yaml": None}
        for ns in SHARDS.values():
            files[f"apps/{ns}/hello.yaml"] = _in(ns, world.template("apps/hello.yaml"))
            files[f"clusters/{ns}/hello-dev.yaml"] = _in(ns, world.template("clusters/hello-dev.yaml"))
        world.commit(files, "hello in team-a and team-b")
        for name, ns in SHARDS.items():
            kubeconfig = token_kubeconfig(world.cluster, tmp_path / f"{name}.kubeconfig", name)
            procs[name] = RunProcess(
                name,
                tmp_path,
                kubeconfig,
                str(world.repo),
                "--watch-namespace",
                ns,
                "--leader-elect",
                env={"POD_NAMESPACE": SYSTEM_NS},
            )
        _wait_all_ready_at(world, "1.0.0", 150)

        world.commit(
            {f"apps/{ns}/hello.yaml": _in(ns, hello_app("2.0.0")) for ns in SHARDS.values()}, "hello 2.0.0 in both namespaces"
        )
        for proc in procs.values():
            proc.poll_now()
        _wait_all_ready_at(world, "2.0.0", 240)
        for ns in SHARDS.values():
            # held by stock KubeDirector while the cluster uses it: the clusters run 2.0.0 at the StatefulSet level
            assert world.rest.get(KD, "kubedirectorapps", ns, "hello")["spec"]["version"] == "1.0.0"

        leases = {name: shard_lease_name([ns]) for name, ns in SHARDS.items()}
        assert len(set(leases.values())) == len(SHARDS), "two shards, two Leases"
        held = _leases(world)
        for name, lease in leases.items():
            assert held.get(lease, "").startswith(name + "_"), (name, lease, held)
            assert f"Lease {lease}" in procs[name].log()
        for name, ns in SHARDS.items():
            writes = [e for e in world.cluster.access_log.entries(name) if e.verb in WRITES]
            assert any(e.resource == "kubedirectorapps" for e in writes), f"{name} applied nothing"
            stray = sorted({_describe(e) for e in writes if not _own(e, ns, leases[name])})
            assert not stray, f"{name} wrote outside {ns}: {stray}"
    finally:
        for proc in procs.values():
            proc.stop()
        world.close()


def _own(entry: Any, namespace: str, lease: str) -> bool:
    """A write in the shard's namespace, or to its own Lease or instance record (GitOpsKDSource named after it)."""
    if entry.resource in ("leases", "gitopskdsources"):
        return entry.namespace == SYSTEM_NS and entry.name in ("", lease)
    return entry.namespace == namespace


def _describe(entry: Any) -> str:
    return f"{entry.verb} {entry.resource} {entry.namespace}/{entry.name}"
