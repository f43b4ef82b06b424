"""Fixtures: an EmbeddedCluster running the repo-template hello app (hello-dev, 1 controller + 2 workers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.testing import pod_ready, wait_for
from kdsim import images
from kdsim.cluster import EmbeddedCluster
from kubeplumb.rest import RestClient
from tests.kdcluster import embedded_cluster

ROOT = Path(__file__).resolve().parents[2]
KD = "kubedirector.hpe.com/v1beta1"
NS = "default"


@pytest.fixture(scope="module")
def hello(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedCluster, RestClient, dict]]:
    """(cluster, rest, KDCluster status) with hello-dev configured and every pod Ready."""
    with embedded_cluster(tmp_path_factory.mktemp("exec-cluster"), controllers=True) as cluster:
        images.store_for(cluster).add("gitops-kd/hello:1.0.0", {"/var/lib/hello/data": "v1\n", "/etc/hello/version": "1.0.0\n"})
        rest = RestClient(cluster.api_client())
        for path, plural in (("apps/hello.yaml", "kubedirectorapps"), ("clusters/hello-dev.yaml", "kubedirectorclusters")):
            doc = yaml.safe_load((ROOT / "repo-template" / path).read_text())
            doc["metadata"]["namespace"] = NS
            rest.create(KD, plural, NS, doc)

        def configured() -> dict | None:
            obj = rest.get(KD, "kubedirectorclusters", NS, "hello-dev")
            status = obj.get("status") or {}
            return obj if status.get("state") == "configured" else None

        obj = wait_for("hello-dev configured", configured, 90)
        for role in obj["status"]["roles"]:
            for m in role["members"]:
                wait_for(f"{m['pod']} Ready", lambda p=m["pod"]: pod_ready(rest.get_or_none("v1", "pods", NS, p)))
        yield cluster, rest, obj


def events(rest: RestClient, reason: str) -> list[dict[str, Any]]:
    return [e for e in rest.list("v1", "events", NS)["items"] if e.get("reason") == reason]
