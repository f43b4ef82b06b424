"""CRUD through the official client and kubectl: discovery, TLS kubeconfig, conflicts, generation, namespaces."""

from __future__ import annotations

import kubernetes.client
import pytest
from apiserver_util import Kubectl, kubectl_json, message_of, raw
from kubernetes.client.rest import ApiException

from kdsim.cluster import EmbeddedCluster


def _sts(name: str, image: str = "nginx:1.25", replicas: int = 1) -> dict:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "main", "image": image}]}},
        },
    }


def test_version_and_discovery(api: kubernetes.client.ApiClient, kubectl: Kubectl) -> None:
    info = kubernetes.client.VersionApi(api).get_code()
    assert info.git_version.startswith("v1.30.")
    out = kubectl("api-resources").stdout
    for needle in ("statefulsets", "kubedirectorclusters", "kdcluster", "customresourcedefinitions", "leases"):
        assert needle in out
    apps = kubernetes.client.AppsV1Api(api).get_api_resources()
    names = {r.name for r in apps.resources}
    assert {"statefulsets", "statefulsets/status", "statefulsets/scale", "controllerrevisions"} <= names


def test_initial_namespaces_and_service_accounts(api: kubernetes.client.ApiClient) -> None:
    core = kubernetes.client.CoreV1Api(api)
    names = {n.metadata.name for n in core.list_namespace().items}
    assert {"default", "kube-system"} <= names
    assert core.read_namespaced_service_account("default", "kube-system").metadata.name == "default"


def test_create_get_list_delete_configmap(api: kubernetes.client.ApiClient, ns: str, kubectl: Kubectl) -> None:
    core = kubernetes.client.CoreV1Api(api)
    created = core.create_namespaced_config_map(ns, {"metadata": {"name": "cfg", "labels": {"tier": "a"}}, "data": {"k": "v"}})
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert int(created.metadata.resource_version) > 0
    assert core.read_namespaced_config_map("cfg", ns).data == {"k": "v"}
    assert [c.metadata.name for c in core.list_namespaced_config_map(ns, label_selector="tier=a").items] == ["cfg"]
    assert core.list_namespaced_config_map(ns, label_selector="tier=b").items == []
    out = kubectl("get", "configmaps", "-n", ns).stdout
    assert out.split()[:3] == ["NAME", "DATA", "AGE"] and "cfg" in out
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "cfg"}})
    assert exc.value.status == 409 and '"cfg" already exists' in message_of(exc.value)
    core.delete_namespaced_config_map("cfg", ns)
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_config_map("cfg", ns)
    assert exc.value.status == 404 and 'configmaps "cfg" not found' in message_of(exc.value)


def test_generate_name_and_missing_namespace(api: kubernetes.client.ApiClient) -> None:
    core = kubernetes.client.CoreV1Api(api)
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("nope-missing", {"metadata": {"name": "x"}})
    assert exc.value.status == 404 and 'namespaces "nope-missing" not found' in message_of(exc.value)
    made = core.create_namespaced_config_map("default", {"metadata": {"generateName": "gen-"}})
    assert made.metadata.name.startswith("gen-") and len(made.metadata.name) == 9
    core.delete_namespaced_config_map(made.metadata.name, "default")


def test_stale_update_is_409(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    first = core.create_namespaced_config_map(ns, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    first.data = {"a": "2"}
    core.replace_namespaced_config_map("c", ns, first)
    first.data = {"a": "3"}
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("c", ns, first)
    assert exc.value.status == 409
    assert (
        'Operation cannot be fulfilled on configmaps "c": the object has been modified; please apply your '
        "changes to the latest version and try again"
    ) in message_of(exc.value)


def test_generation_bumps_only_on_spec(api: kubernetes.client.ApiClient, ns: str) -> None:
    apps = kubernetes.client.AppsV1Api(api)
    sts = apps.create_namespaced_stateful_set(ns, _sts("web"))
    assert sts.metadata.generation == 1
    labelled = apps.patch_namespaced_stateful_set("web", ns, {"metadata": {"labels": {"extra": "yes"}}})
    assert labelled.metadata.generation == 1
    assert int(labelled.metadata.resource_version) > int(sts.metadata.resource_version)
    status = apps.patch_namespaced_stateful_set_status("web", ns, {"status": {"replicas": 1, "readyReplicas": 1}})
    assert status.metadata.generation == 1 and status.status.ready_replicas == 1
    scaled = apps.patch_namespaced_stateful_set("web", ns, {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2
    # The main resource ignores status changes; the status subresource ignores spec changes.
    body = apps.read_namespaced_stateful_set("web", ns)
    body.status.ready_replicas = 0
    body.spec.replicas = 4
    after = apps.replace_namespaced_stateful_set("web", ns, body)
    assert after.status.ready_replicas == 1 and after.spec.replicas == 4 and after.metadata.generation == 3
    body = apps.read_namespaced_stateful_set("web", ns)
    body.spec.replicas = 9
    body.status.ready_replicas = 2
    after = apps.replace_namespaced_stateful_set_status("web", ns, body)
    assert after.spec.replicas == 4 and after.status.ready_replicas == 2 and after.metadata.generation == 3


def test_noop_update_keeps_resource_version(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    made = core.create_namespaced_config_map(ns, {"metadata": {"name": "same"}, "data": {"a": "1"}})
    again = core.patch_namespaced_config_map("same", ns, {"data": {"a": "1"}})
    assert again.metadata.resource_version == made.metadata.resource_version


def test_scale_subresource(api: kubernetes.client.ApiClient, ns: str, kubectl: Kubectl) -> None:
    apps = kubernetes.client.AppsV1Api(api)
    apps.create_namespaced_stateful_set(ns, _sts("db", replicas=2))
    scale = apps.read_namespaced_stateful_set_scale("db", ns)
    assert scale.spec.replicas == 2 and scale.status.selector == "app=db"
    kubectl("scale", "statefulset/db", "--replicas=5", "-n", ns)
    assert apps.read_namespaced_stateful_set("db", ns).spec.replicas == 5


def test_service_cluster_ip_allocated(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    a = core.create_namespaced_service(ns, {"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}})
    b = core.create_namespaced_service(ns, {"metadata": {"name": "b"}, "spec": {"ports": [{"port": 80}]}})
    h = core.create_namespaced_service(ns, {"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}})
    assert a.spec.cluster_ip.startswith("10.9") and a.spec.cluster_ip != b.spec.cluster_ip
    assert h.spec.cluster_ip == "None"


def test_list_limit_and_continue(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    for i in range(5):
        core.create_namespaced_config_map(ns, {"metadata": {"name": f"c{i}"}})
    first = core.list_namespaced_config_map(ns, limit=2)
    assert len(first.items) == 2 and first.metadata._continue
    rest = core.list_namespaced_config_map(ns, limit=10, _continue=first.metadata._continue)
    names = [c.metadata.name for c in first.items + rest.items]
    assert names == ["c0", "c1", "c2", "c3", "c4"]
    assert first.metadata.remaining_item_count == 3 and rest.metadata._continue is None


def test_continue_resumes_after_the_last_key_sent(api: kubernetes.client.ApiClient, ns: str) -> None:
    """Invariant: a paged LIST never skips nor repeats an object that stays, whatever is created or deleted between
    pages (the continue token names the last key sent, like kube-apiserver's, not an offset)."""
    core = kubernetes.client.CoreV1Api(api)
    for i in range(6):
        core.create_namespaced_config_map(ns, {"metadata": {"name": f"c{i}", "labels": {"even": str(i % 2 == 0)}}})
    first = core.list_namespaced_config_map(ns, limit=3)
    core.delete_namespaced_config_map("c0", ns)  # before the token's key: an offset would skip c3
    core.delete_namespaced_config_map("c2", ns)  # the token's own key
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c1a"}})  # sorts before the token's key: not sent
    rest = core.list_namespaced_config_map(ns, limit=10, _continue=first.metadata._continue)
    assert [c.metadata.name for c in first.items] == ["c0", "c1", "c2"]
    assert [c.metadata.name for c in rest.items] == ["c3", "c4", "c5"]
    even = core.list_namespaced_config_map(ns, limit=1, label_selector="even=True")
    assert [c.metadata.name for c in even.items] == ["c4"] and even.metadata._continue
    assert even.metadata.remaining_item_count is None  # kube-apiserver does not count keys a selector filters
    tail = core.list_namespaced_config_map(ns, limit=1, label_selector="even=True", _continue=even.metadata._continue)
    assert [c.metadata.name for c in tail.items] == []


def test_kubectl_get_yaml_and_tables(kubectl: Kubectl, ns: str, api: kubernetes.client.ApiClient) -> None:
    kubernetes.client.AppsV1Api(api).create_namespaced_stateful_set(ns, _sts("tbl", replicas=2))
    out = kubectl("get", "sts", "-n", ns).stdout.splitlines()
    assert out[0].split() == ["NAME", "READY", "AGE"] and out[1].split()[:2] == ["tbl", "0/2"]
    wide = kubectl("get", "sts", "-n", ns, "-o", "wide").stdout
    assert "IMAGES" in wide and "nginx:1.25" in wide
    doc = kubectl_json(kubectl, "get", "sts", "tbl", "-n", ns)
    assert doc["kind"] == "StatefulSet" and doc["spec"]["replicas"] == 2
    assert "kind: StatefulSet" in kubectl("get", "sts", "tbl", "-n", ns, "-o", "yaml").stdout


def test_in_process_store(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    kubernetes.client.CoreV1Api(api).create_namespaced_config_map(ns, {"metadata": {"name": "s", "labels": {"x": "1"}}})
    got = cluster.store.get("v1", "configmaps", ns, "s")
    assert got is not None and got["metadata"]["labels"] == {"x": "1"} and got["apiVersion"] == "v1"
    assert [o["metadata"]["name"] for o in cluster.store.list("v1", "configmaps", ns, labels={"x": "1"})] == ["s"]
    assert cluster.store.get("v1", "configmaps", ns, "absent") is None


def test_secret_string_data_becomes_data(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    made = core.create_namespaced_secret(ns, {"metadata": {"name": "s"}, "data": {"a": "YQ=="}, "stringData": {"b": "bee"}})
    assert made.data == {"a": "YQ==", "b": "YmVl"} and made.string_data is None and made.type == "Opaque"


@pytest.mark.parametrize(
    "resources, qos",
    [
        ({}, "BestEffort"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"cpu": "100m"}}, "Burstable"),
    ],
)
def test_pod_starts_pending_with_qos_class(api: kubernetes.client.ApiClient, ns: str, resources: dict, qos: str) -> None:
    pod = kubernetes.client.CoreV1Api(api).create_namespaced_pod(
        ns, {"metadata": {"name": "q"}, "spec": {"containers": [{"name": "c", "image": "busybox", "resources": resources}]}}
    )
    assert pod.status.phase == "Pending" and pod.status.qos_class == qos


def test_delete_on_status_subresource_is_405(cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str) -> None:
    kubernetes.client.CoreV1Api(api).create_namespaced_pod(
        ns, {"metadata": {"name": "keep"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    )
    status, _ = raw(cluster, "DELETE", f"/api/v1/namespaces/{ns}/pods/keep/status")
    assert status == 405
    assert kubernetes.client.CoreV1Api(api).read_namespaced_pod("keep", ns).metadata.name == "keep"
