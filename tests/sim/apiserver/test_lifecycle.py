"""Deletion semantics: finalizers, propagation policies and ownerReference GC, namespaces, pods, immutability."""

from __future__ import annotations

import kubernetes.client
import pytest
from apiserver_util import Kubectl, message_of, wait_for
from kubernetes.client.rest import ApiException


def _cm(api: kubernetes.client.ApiClient, ns: str, name: str, **meta: object) -> kubernetes.client.V1ConfigMap:
    return kubernetes.client.CoreV1Api(api).create_namespaced_config_map(ns, {"metadata": dict(name=name, **meta)})


def _owner_ref(owner: kubernetes.client.V1ConfigMap, block: bool = True) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": block,
    }


def _exists(api: kubernetes.client.ApiClient, ns: str, name: str) -> bool:
    try:
        kubernetes.client.CoreV1Api(api).read_namespaced_config_map(name, ns)
        return True
    except ApiException as exc:
        assert exc.status == 404
        return False


def test_finalizers_hold_deletion(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    _cm(api, ns, "held", finalizers=["example.com/hold"])
    core.delete_namespaced_config_map("held", ns)
    held = core.read_namespaced_config_map("held", ns)
    assert held.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_config_map("held", ns, {"metadata": {"finalizers": ["example.com/hold", "new/one"]}})
    assert exc.value.status == 422 and "no new finalizers can be added" in message_of(exc.value)
    core.patch_namespaced_config_map("held", ns, {"metadata": {"finalizers": None}})
    assert not _exists(api, ns, "held")


def test_background_gc_deletes_dependents(api: kubernetes.client.ApiClient, ns: str) -> None:
    owner = _cm(api, ns, "owner")
    _cm(api, ns, "dep", ownerReferences=[_owner_ref(owner)])
    other = _cm(api, ns, "other-owner")
    _cm(api, ns, "shared", ownerReferences=[_owner_ref(owner), _owner_ref(other)])
    kubernetes.client.CoreV1Api(api).delete_namespaced_config_map("owner", ns)
    wait_for(lambda: not _exists(api, ns, "dep"), what="dependent to be collected")
    shared = kubernetes.client.CoreV1Api(api).read_namespaced_config_map("shared", ns)
    assert [r.name for r in shared.metadata.owner_references] == ["other-owner"]


def test_orphan_propagation_keeps_dependents(api: kubernetes.client.ApiClient, ns: str) -> None:
    owner = _cm(api, ns, "owner")
    _cm(api, ns, "dep", ownerReferences=[_owner_ref(owner)])
    kubernetes.client.CoreV1Api(api).delete_namespaced_config_map("owner", ns, propagation_policy="Orphan")
    assert not _exists(api, ns, "owner")
    dep = kubernetes.client.CoreV1Api(api).read_namespaced_config_map("dep", ns)
    assert not dep.metadata.owner_references


def test_foreground_waits_for_dependents(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    owner = _cm(api, ns, "owner")
    _cm(api, ns, "dep", ownerReferences=[_owner_ref(owner)], finalizers=["example.com/slow"])
    core.delete_namespaced_config_map("owner", ns, propagation_policy="Foreground")
    waiting = core.read_namespaced_config_map("owner", ns)
    assert waiting.metadata.deletion_timestamp is not None and "foregroundDeletion" in waiting.metadata.finalizers
    assert core.read_namespaced_config_map("dep", ns).metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("dep", ns, {"metadata": {"finalizers": None}})
    wait_for(lambda: not _exists(api, ns, "owner"), what="owner to go after its dependents")


def test_namespace_deletion_removes_contents(api: kubernetes.client.ApiClient, kubectl: Kubectl, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    _cm(api, ns, "a")
    _cm(api, ns, "b", finalizers=["example.com/hold"])
    core.delete_namespace(ns)
    assert core.read_namespace(ns).status.phase == "Terminating"
    with pytest.raises(ApiException) as exc:
        _cm(api, ns, "late")
    assert exc.value.status == 403 and "because it is being terminated" in message_of(exc.value)
    assert not _exists(api, ns, "a")
    core.patch_namespaced_config_map("b", ns, {"metadata": {"finalizers": None}})
    kubectl("wait", "--for=delete", f"namespace/{ns}", "--timeout=10s")


def test_pod_graceful_deletion_and_binding(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "terminationGracePeriodSeconds": 30},
    }
    core.create_namespaced_pod(ns, pod)
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }
    core.create_namespaced_pod_binding("p", ns, binding, _preload_content=False)
    assert core.read_namespaced_pod("p", ns).spec.node_name == "node-1"
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_binding("p", ns, binding, _preload_content=False)
    assert exc.value.status == 409 and 'already assigned to node "node-1"' in message_of(exc.value)
    core.delete_namespaced_pod("p", ns)
    terminating = core.read_namespaced_pod("p", ns)
    assert terminating.metadata.deletion_timestamp is not None
    assert terminating.metadata.deletion_grace_period_seconds == 30
    core.delete_namespaced_pod("p", ns, grace_period_seconds=0)
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod("p", ns)
    assert exc.value.status == 404
    # An unscheduled pod goes at once.
    core.create_namespaced_pod(ns, dict(pod, metadata={"name": "q"}))
    core.delete_namespaced_pod("q", ns)
    with pytest.raises(ApiException):
        core.read_namespaced_pod("q", ns)


def test_statefulset_immutable_fields(api: kubernetes.client.ApiClient, ns: str) -> None:
    apps = kubernetes.client.AppsV1Api(api)
    apps.create_namespaced_stateful_set(
        ns,
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 1,
                "serviceName": "web",
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
                },
            },
        },
    )
    with pytest.raises(ApiException) as exc:
        apps.patch_namespaced_stateful_set("web", ns, {"spec": {"serviceName": "other"}})
    assert exc.value.status == 422
    assert message_of(exc.value).startswith(
        "StatefulSet.apps \"web\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas'"
    )
    assert "are forbidden" in message_of(exc.value)
    ok = apps.patch_namespaced_stateful_set(
        "web", ns, {"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}, "replicas": 2}}
    )
    assert ok.spec.update_strategy.type == "OnDelete" and ok.spec.replicas == 2
