"""Helpers for the embedded node tests: polling, kubectl, StatefulSet manifests."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client

from kdsim.cluster import EmbeddedCluster

T = TypeVar("T")


def wait_for(fn: Callable[[], T], timeout: float = 20.0, what: str = "condition") -> T:
    """Poll fn() until it returns something truthy; fail with the last value after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")


def kubectl(cluster: EmbeddedCluster, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig), *args], capture_output=True, text=True, timeout=timeout
    )


def statefulset(
    name: str,
    *,
    replicas: int = 3,
    image: str = "example.com/web:1",
    policy: str = "OrderedReady",
    strategy: dict[str, Any] | None = None,
    claims: bool = False,
    init: list[dict[str, Any]] | None = None,
    container: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A StatefulSet manifest (labels app=<name>, service <name>)."""
    main: dict[str, Any] = {"name": "app", "image": image, **(container or {})}
    spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": name,
        "podManagementPolicy": policy,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [main], "terminationGracePeriodSeconds": 1}},
    }
    if init:
        spec["template"]["spec"]["initContainers"] = init
    if strategy is not None:
        spec["updateStrategy"] = strategy
    if claims:
        spec["volumeClaimTemplates"] = [
            {
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            }
        ]
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name}, "spec": spec}


def pods_by_name(core: client.CoreV1Api, namespace: str, app: str) -> dict[str, client.V1Pod]:
    return {p.metadata.name: p for p in core.list_namespaced_pod(namespace, label_selector=f"app={app}").items}


def sts_ready(apps: client.AppsV1Api, namespace: str, name: str, replicas: int) -> Callable[[], bool]:
    """True once the set reports `replicas` ready pods, all updated, for its current generation."""

    def check() -> bool:
        s = apps.read_namespaced_stateful_set(name, namespace)
        st = s.status
        return bool(
            st
            and st.observed_generation == s.metadata.generation
            and (st.ready_replicas or 0) == replicas
            and (st.updated_replicas or 0) == replicas
            and (st.replicas or 0) == replicas
        )

    return check


def state_dir(cluster: EmbeddedCluster) -> Path:
    assert cluster.state_dir is not None
    return cluster.state_dir


def delete_pod(core: client.CoreV1Api, namespace: str, name: str) -> None:
    """Delete a pod without decoding the answer (a Status when the pod is removed at once, else the Pod)."""
    core.delete_namespaced_pod(name, namespace, _preload_content=False)
