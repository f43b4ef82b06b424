"""Watch: the official client's Watch, kubectl get -w, bookmarks, selector transitions, 410 Expired."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.watch
import pytest
from apiserver_util import raw, wait_for
from kubernetes.client.rest import ApiException

from kdsim.cluster import EmbeddedCluster
from tests.kdcluster import embedded_cluster


def _collect(stream: Any, out: list[tuple[str, str]], stop_after: int) -> None:
    for ev in stream:
        obj = ev["object"]
        name = obj.metadata.name if hasattr(obj, "metadata") and obj.metadata else ev["raw_object"]["metadata"].get("name", "")
        out.append((ev["type"], name))
        if len(out) >= stop_after:
            return


def test_watch_added_modified_deleted_live(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    events: list[tuple[str, str]] = []
    before = cluster.server.hub.count()
    w = kubernetes.watch.Watch()
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    t = threading.Thread(
        target=_collect, args=(w.stream(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=10), events, 3)
    )
    t.start()
    wait_for(lambda: cluster.server.hub.count() > before, what="watch to open")
    core.create_namespaced_config_map(ns, {"metadata": {"name": "w"}, "data": {"a": "1"}})
    core.patch_namespaced_config_map("w", ns, {"data": {"a": "2"}})
    core.delete_namespaced_config_map("w", ns)
    t.join(timeout=10)
    w.stop()
    assert events == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_watch_replays_from_resource_version(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "old"}})
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "new"}})
    core.patch_namespaced_config_map("old", ns, {"data": {"x": "y"}})
    events: list[tuple[str, str]] = []
    _collect(
        kubernetes.watch.Watch().stream(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=5), events, 2
    )
    assert events == [("ADDED", "new"), ("MODIFIED", "old")]
    # Without a resourceVersion the watch starts with the current objects as ADDED.
    events = []
    _collect(kubernetes.watch.Watch().stream(core.list_namespaced_config_map, ns, timeout_seconds=5), events, 2)
    assert sorted(events) == [("ADDED", "new"), ("ADDED", "old")]


def test_label_selector_transitions(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "s", "labels": {"pick": "yes"}}})
    core.patch_namespaced_config_map("s", ns, {"metadata": {"labels": {"pick": "no"}}})
    core.patch_namespaced_config_map("s", ns, {"data": {"ignored": "1"}})
    core.patch_namespaced_config_map("s", ns, {"metadata": {"labels": {"pick": "yes"}}})
    events: list[tuple[str, str]] = []
    _collect(
        kubernetes.watch.Watch().stream(
            core.list_namespaced_config_map, ns, resource_version=rv, label_selector="pick=yes", timeout_seconds=5
        ),
        events,
        3,
    )
    assert events == [("ADDED", "s"), ("DELETED", "s"), ("ADDED", "s")]


def test_bookmarks(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    w = kubernetes.watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=10):
        assert ev["type"] == "BOOKMARK"
        assert int(ev["raw_object"]["metadata"]["resourceVersion"]) >= int(rv)
        w.stop()
        break
    else:
        pytest.fail("no BOOKMARK within the watch timeout")


def test_too_old_resource_version_is_410(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "a"}})
    old_rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "b"}})
    cluster.store.compact()
    floor = cluster.store.resource_version
    with pytest.raises(ApiException) as exc:
        for _ in kubernetes.watch.Watch().stream(core.list_namespaced_config_map, ns, resource_version=old_rv, timeout_seconds=5):
            pass
    assert exc.value.status == 410
    assert f"Expired: too old resource version: {old_rv} ({floor + 1})" in str(exc.value.reason)


def test_the_history_is_per_resource_so_a_quiet_resource_resumes_after_a_busy_one(tmp_path: Path) -> None:
    """Invariant (kube-apiserver's watch cache is per resource): writes to one resource never expire the
    resourceVersion a watch of another resource resumes from; its own writes past the history do."""
    with embedded_cluster(tmp_path, controllers=False, history_limit=5) as c:
        core = kubernetes.client.CoreV1Api(c.api_client())
        core.create_namespace({"metadata": {"name": "w"}})
        core.create_namespaced_config_map("w", {"metadata": {"name": "quiet"}})
        old_rv = core.list_namespaced_config_map("w").metadata.resource_version
        for i in range(10):
            core.create_namespaced_secret("w", {"metadata": {"name": f"busy-{i}"}})
        core.create_namespaced_config_map("w", {"metadata": {"name": "after"}})
        events = [
            (e["type"], e["object"].metadata.name)
            for e in kubernetes.watch.Watch().stream(
                core.list_namespaced_config_map, "w", resource_version=old_rv, timeout_seconds=1
            )
        ]
        assert events == [("ADDED", "after")]
        with pytest.raises(ApiException) as exc:
            for _ in kubernetes.watch.Watch().stream(
                core.list_namespaced_secret, "w", resource_version=old_rv, timeout_seconds=5
            ):
                pass
        assert exc.value.status == 410 and "too old resource version" in str(exc.value.reason)


def test_deprecated_watch_path_and_timeout(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    kubernetes.client.CoreV1Api(api).create_namespaced_config_map(ns, {"metadata": {"name": "legacy"}})
    status, body = raw(cluster, "GET", f"/api/v1/watch/namespaces/{ns}/configmaps?timeoutSeconds=1")
    assert status == 200
    lines = [json.loads(line) for line in body.decode().splitlines() if line]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "legacy")]
    assert lines[0]["object"]["kind"] == "ConfigMap"


def test_kubectl_get_watch(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    before = cluster.server.hub.count()
    proc = subprocess.Popen(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "get", "configmaps", "-n", ns, "-w", "--output-watch-events"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        wait_for(lambda: cluster.server.hub.count() > before, timeout=20, what="kubectl to open its watch")
        core.create_namespaced_config_map(ns, {"metadata": {"name": "seen"}, "data": {"a": "1"}})
        core.delete_namespaced_config_map("seen", ns)
        lines = []
        for line in proc.stdout:
            lines.append(line.split()[:2])
            if ["DELETED", "seen"] in lines:
                break
        assert lines[0] == ["EVENT", "NAME"]
        assert ["ADDED", "seen"] in lines and ["DELETED", "seen"] in lines
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_client_disconnect_ends_the_watch(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "quiet"}})
    before = cluster.server.hub.count()
    resp = core.list_namespaced_config_map(ns, watch=True, timeout_seconds=120, _preload_content=False)
    first = json.loads(resp.readline() if hasattr(resp, "readline") else next(resp.stream()))
    assert first["type"] == "ADDED" and cluster.server.hub.count() == before + 1
    resp.close()
    wait_for(lambda: cluster.server.hub.count() == before, what="the server to notice the disconnect")
