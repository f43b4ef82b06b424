"""Fault injection (from Python and over HTTP) and restart persistence of the embedded cluster."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import kubernetes.client
import kubernetes.watch
import pytest
from apiserver_util import raw, wait_for
from kubernetes.client.rest import ApiException

from kdsim.cluster import EmbeddedCluster


def test_fail_next_500_then_recover(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "f"}})
    cluster.faults.fail_next(2, verb="get", resource="configmaps")
    for _ in range(2):
        with pytest.raises(ApiException) as exc:
            core.read_namespaced_config_map("f", ns)
        assert exc.value.status == 500 and json.loads(exc.value.body)["reason"] == "InternalError"
    assert core.read_namespaced_config_map("f", ns).metadata.name == "f"
    assert cluster.faults.rules() == []


def test_conflict_fault_over_http(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c"}})
    status, body = raw(cluster, "POST", "/sim/faults", {"kind": "conflict", "verb": "patch", "resource": "configmaps"})
    assert status == 200 and json.loads(body)["remaining"] == 1
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_config_map("c", ns, {"data": {"a": "b"}})
    assert exc.value.status == 409 and "Operation cannot be fulfilled" in json.loads(exc.value.body)["message"]
    # Reads are unaffected, and the next patch succeeds.
    assert core.patch_namespaced_config_map("c", ns, {"data": {"a": "b"}}).data == {"a": "b"}
    status, body = raw(cluster, "POST", "/sim/faults", {"kind": "bogus"})
    assert status == 400 and "bogus" in json.loads(body)["message"]


def test_timeout_fault_delays_then_504(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    cluster.faults.timeout_next(1, verb="list", resource="configmaps", delay=0.3)
    started = time.monotonic()
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_config_map(ns)
    assert exc.value.status == 504 and time.monotonic() - started >= 0.3
    assert json.loads(exc.value.body)["reason"] == "Timeout"
    core.list_namespaced_config_map(ns)


def test_lost_fault_applies_the_write_then_answers_504(
    cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str
) -> None:
    """The write is carried out; only its answer is lost (a 504 that says the server may still process it)."""
    core = kubernetes.client.CoreV1Api(api)
    status, body = raw(cluster, "POST", "/sim/faults", {"kind": "lost", "verb": "create", "resource": "configmaps", "delay": 0.2})
    assert status == 200 and json.loads(body)["kind"] == "lost"
    started = time.monotonic()
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "applied"}, "data": {"k": "v"}})
    assert exc.value.status == 504 and time.monotonic() - started >= 0.2
    assert "may still be processing the request" in json.loads(exc.value.body)["message"]
    assert core.read_namespaced_config_map("applied", ns).data == {"k": "v"}
    cluster.faults.lose_next(1, verb="create", resource="configmaps")
    with pytest.raises(ApiException) as exc:  # a write refused by the server: its answer is lost all the same
        core.create_namespaced_config_map(ns, {"metadata": {"name": "applied"}})
    assert exc.value.status == 504 and cluster.faults.rules() == []


def test_subresource_faults_are_separate(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    apps = kubernetes.client.AppsV1Api(api)
    apps.create_namespaced_stateful_set(
        ns,
        {
            "metadata": {"name": "s"},
            "spec": {
                "replicas": 1,
                "serviceName": "s",
                "selector": {"matchLabels": {"app": "s"}},
                "template": {"metadata": {"labels": {"app": "s"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
            },
        },
    )
    cluster.faults.fail_next(1, verb="patch", resource="statefulsets/status")
    apps.patch_namespaced_stateful_set("s", ns, {"metadata": {"labels": {"x": "y"}}})
    with pytest.raises(ApiException) as exc:
        apps.patch_namespaced_stateful_set_status("s", ns, {"status": {"replicas": 1}})
    assert exc.value.status == 500


def test_drop_watches(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    before = cluster.server.hub.count()
    ended = threading.Event()

    def consume() -> None:
        for _ in kubernetes.watch.Watch().stream(core.list_namespaced_config_map, ns, timeout_seconds=60):
            pass
        ended.set()

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    wait_for(lambda: cluster.server.hub.count() > before, what="watch to open")
    status, body = raw(cluster, "POST", "/sim/faults", {"action": "drop-watches"})
    assert status == 200 and json.loads(body)["dropped"] >= 1
    assert ended.wait(10), "the watch stream was not closed"


def test_restart_keeps_state_and_resource_versions(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with EmbeddedCluster(state, controllers=False, pod_grace_cap=3600) as first:
        client = first.api_client()
        core = kubernetes.client.CoreV1Api(client)
        core.create_namespace({"metadata": {"name": "keep"}})
        made = core.create_namespaced_config_map("keep", {"metadata": {"name": "kept"}, "data": {"a": "1"}})
        core.create_namespaced_pod(
            "keep", {"metadata": {"name": "p"}, "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]}}
        )
        core.delete_namespaced_pod("p", "keep", grace_period_seconds=3600)
        assert core.read_namespaced_pod("p", "keep").metadata.deletion_timestamp is not None
        rv = int(core.list_namespaced_config_map("keep").metadata.resource_version)
        client.close()
    with EmbeddedCluster(state, controllers=False) as second:
        client = second.api_client()
        core = kubernetes.client.CoreV1Api(client)
        again = core.read_namespaced_config_map("kept", "keep")
        assert again.metadata.uid == made.metadata.uid and again.data == {"a": "1"}
        # The pod that was terminating when the server stopped still goes away (no kubelet confirms it here).
        wait_for(
            lambda: not [p for p in core.list_namespaced_pod("keep").items],
            timeout=10,
            what="the terminating pod to be removed after the restart",
        )
        newer = core.create_namespaced_config_map("keep", {"metadata": {"name": "newer"}})
        assert int(newer.metadata.resource_version) > rv
        names = {c.metadata.name for c in kubernetes.client.ApiextensionsV1Api(client).list_custom_resource_definition().items}
        assert "kubedirectorclusters.kubedirector.hpe.com" in names
        # History does not survive a restart: an old resourceVersion is Expired, as after etcd compaction.
        with pytest.raises(ApiException) as exc:
            for _ in kubernetes.watch.Watch().stream(
                core.list_namespaced_config_map, "keep", resource_version=str(rv - 1), timeout_seconds=5
            ):
                pass
        assert exc.value.status == 410
        client.close()
    assert (state / "store.json").is_file() and (state / "kubeconfig").is_file()


def test_plain_http_cluster() -> None:
    with EmbeddedCluster(controllers=False, use_tls=False) as plain:
        assert plain.url.startswith("http://127.0.0.1:")
        client = plain.api_client()
        names = {n.metadata.name for n in kubernetes.client.CoreV1Api(client).list_namespace().items}
        assert {"default", "kube-system"} <= names
        client.close()
        kubeconfig = plain.kubeconfig
        assert "certificate-authority-data" not in kubeconfig.read_text()
    assert not kubeconfig.exists()  # the temporary state is cleaned up


def test_request_counts() -> None:
    with EmbeddedCluster(controllers=False, use_tls=False) as c:
        c.requests.reset()
        client = c.api_client()
        core = kubernetes.client.CoreV1Api(client)
        core.list_namespaced_config_map("default")
        core.list_namespaced_config_map("default")
        core.create_namespaced_config_map("default", {"metadata": {"name": "x"}})
        core.patch_namespaced_config_map("x", "default", {"data": {"a": "b"}})
        client.close()
        assert c.requests.total("list", "configmaps") == 2
        assert c.requests.total(resource="configmaps") == 4 and c.requests.total() == 4
        status, body = raw_http(c.url + "/sim/requests")
        assert status == 200 and json.loads(body)["requests"] == {
            "create configmaps": 1,
            "list configmaps": 2,
            "patch configmaps": 1,
        }


def raw_http(url: str) -> tuple[int, bytes]:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.status, resp.read()


def test_crash_keeps_journaled_writes(tmp_path: Path) -> None:
    """Invariant: a write the saver has appended survives a crash (no final snapshot), a removal stays removed,
    and a torn last journal line is ignored. The crash is a copy of the state directory taken while running."""
    state, crashed = tmp_path / "state", tmp_path / "crashed"
    with EmbeddedCluster(state, controllers=False) as first:
        client = first.api_client()
        core = kubernetes.client.CoreV1Api(client)
        core.create_namespace({"metadata": {"name": "j"}})
        core.create_namespaced_config_map("j", {"metadata": {"name": "gone"}})
        core.delete_namespaced_config_map("gone", "j")
        made = core.create_namespaced_config_map("j", {"metadata": {"name": "kept"}, "data": {"a": "2"}})
        journal = state / "store.journal"
        wait_for(
            lambda: journal.is_file() and b'"name":"kept"' in journal.read_bytes(),
            timeout=10,
            what="the saver to append the config map to the journal",
        )
        snapshot = json.loads((state / "store.json").read_text())
        assert "kept" not in {e["object"]["metadata"]["name"] for e in snapshot["objects"]}  # only in the journal
        crashed.mkdir()
        for name in ("store.json", "store.journal", "kubeconfig"):
            (crashed / name).write_bytes((state / name).read_bytes())
        with (crashed / "store.journal").open("ab") as fh:
            fh.write(b'{"rv": 99999, "group": "", "plu')  # a crash in the middle of an append
        client.close()
    with EmbeddedCluster(crashed, controllers=False) as second:
        client = second.api_client()
        core = kubernetes.client.CoreV1Api(client)
        again = core.read_namespaced_config_map("kept", "j")
        assert again.metadata.uid == made.metadata.uid and again.data == {"a": "2"}
        assert "gone" not in {c.metadata.name for c in core.list_namespaced_config_map("j").items}
        newer = core.create_namespaced_config_map("j", {"metadata": {"name": "newer"}})
        assert int(newer.metadata.resource_version) > int(made.metadata.resource_version)
        client.close()
    assert not (crashed / "store.journal").exists()  # folded into the snapshot at stop


def test_journal_line_in_the_middle_that_is_broken_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with EmbeddedCluster(state, controllers=False):
        pass
    (state / "store.journal").write_bytes(
        b'not json\n{"rv": 1, "group": "", "plural": "x", "namespace": "", "name": "y", "object": null}\n'
    )
    with pytest.raises(ValueError, match=r"store.journal: line 1: not a journal entry"):
        EmbeddedCluster(state, controllers=False).start()
