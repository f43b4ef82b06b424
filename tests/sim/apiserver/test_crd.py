"""Custom resources: the KubeDirector CRDs served at start, schema validation (422), pruning, defaulting, status."""

from __future__ import annotations

from pathlib import Path

import kubernetes.client
import pytest
from apiserver_util import Kubectl, kubectl_json, message_of, wait_for
from kubernetes.client.rest import ApiException

KD = ("kubedirector.hpe.com", "v1beta1")


def _kdcluster(name: str, **spec: object) -> dict:
    res = {"requests": {"memory": "1Gi", "cpu": "1"}, "limits": {"memory": "1Gi", "cpu": "1"}}
    body = {"app": "centos7x", "roles": [{"id": "vanilla_centos", "members": 1, "resources": res}]}
    body.update(spec)
    return {"apiVersion": "kubedirector.hpe.com/v1beta1", "kind": "KubeDirectorCluster", "metadata": {"name": name}, "spec": body}


def test_kubectl_apply_kdapp_and_kdcluster(kubectl: Kubectl, kd_shared: Path, ns: str) -> None:
    kubectl("apply", "-n", ns, "-f", str(kd_shared / "catalog" / "cr-app-centos7.json"))
    kubectl("apply", "-n", ns, "-f", str(kd_shared / "clusters" / "cr-cluster-centos7.yaml"))
    apps = kubectl("get", "kdapp", "-n", ns).stdout.splitlines()
    assert apps[0].split()[:3] == ["NAME", "APP", "NAME"] and apps[1].split()[0] == "centos7x"
    clusters = kubectl("get", "kdcluster", "-n", ns).stdout.splitlines()
    assert clusters[0].split()[:3] == ["NAME", "KDAPP", "STATE"] and clusters[1].split()[:2] == ["centos7", "centos7x"]
    again = kubectl("apply", "-n", ns, "-f", str(kd_shared / "clusters" / "cr-cluster-centos7.yaml")).stdout
    assert "unchanged" in again
    doc = kubectl_json(kubectl, "get", "kdcluster", "centos7", "-n", ns)
    assert doc["metadata"]["generation"] == 1 and doc["spec"]["app"] == "centos7x"


def test_schema_error_is_422(api: kubernetes.client.ApiClient, ns: str) -> None:
    custom = kubernetes.client.CustomObjectsApi(api)
    bad = _kdcluster("bad")
    del bad["spec"]["app"]
    with pytest.raises(ApiException) as exc:
        custom.create_namespaced_custom_object(*KD, ns, "kubedirectorclusters", bad)
    assert exc.value.status == 422
    msg = message_of(exc.value)
    assert msg.startswith('KubeDirectorCluster.kubedirector.hpe.com "bad" is invalid: ') and "spec.app" in msg
    assert "Required value" in msg
    with pytest.raises(ApiException) as exc:
        custom.create_namespaced_custom_object(*KD, ns, "kubedirectorclusters", _kdcluster("bad2", serviceType="Bogus"))
    assert exc.value.status == 422 and "spec.serviceType" in message_of(exc.value)


def test_kdcluster_status_subresource(api: kubernetes.client.ApiClient, ns: str) -> None:
    custom = kubernetes.client.CustomObjectsApi(api)
    made = custom.create_namespaced_custom_object(
        *KD, ns, "kubedirectorclusters", dict(_kdcluster("st"), status={"state": "ignored"})
    )
    assert "status" not in made and made["metadata"]["generation"] == 1
    patched = custom.patch_namespaced_custom_object_status(
        *KD, ns, "kubedirectorclusters", "st", {"status": {"state": "configured"}}
    )
    assert patched["status"]["state"] == "configured" and patched["metadata"]["generation"] == 1
    body = custom.get_namespaced_custom_object(*KD, ns, "kubedirectorclusters", "st")
    body["status"]["state"] = "changed-through-main"
    body["spec"]["roles"][0]["members"] = 2
    after = custom.replace_namespaced_custom_object(*KD, ns, "kubedirectorclusters", "st", body)
    assert after["status"]["state"] == "configured" and after["metadata"]["generation"] == 2


_WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer", "default": 3, "minimum": 1},
                                    "color": {"type": "string"},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


def test_new_crd_is_served_with_pruning_and_defaults(api: kubernetes.client.ApiClient, kubectl: Kubectl, ns: str) -> None:
    ext = kubernetes.client.ApiextensionsV1Api(api)
    custom = kubernetes.client.CustomObjectsApi(api)
    try:
        ext.create_custom_resource_definition(_WIDGET_CRD)
    except ApiException as exc:
        assert exc.status == 409
    kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")
    made = custom.create_namespaced_custom_object(
        "example.com",
        "v1",
        ns,
        "widgets",
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w1"},
            "spec": {"color": "red", "unknownField": "dropped"},
        },
    )
    assert made["spec"] == {"color": "red", "size": 3}
    assert kubectl("get", "wd", "-n", ns).stdout.split()[:2] == ["NAME", "AGE"]
    with pytest.raises(ApiException) as exc:
        custom.create_namespaced_custom_object(
            "example.com",
            "v1",
            ns,
            "widgets",
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w2"}, "spec": {"size": 0}},
        )
    assert exc.value.status == 422 and "spec.size" in message_of(exc.value)


def test_deleting_a_crd_stops_serving(api: kubernetes.client.ApiClient, ns: str) -> None:
    ext = kubernetes.client.ApiextensionsV1Api(api)
    crd = dict(_WIDGET_CRD, metadata={"name": "gadgets.example.com"})
    crd["spec"] = dict(crd["spec"], names={"plural": "gadgets", "singular": "gadget", "kind": "Gadget"})
    ext.create_custom_resource_definition(crd)
    custom = kubernetes.client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(
        "example.com", "v1", ns, "gadgets", {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    )
    ext.delete_custom_resource_definition("gadgets.example.com")

    def gone() -> bool:
        try:
            custom.list_namespaced_custom_object("example.com", "v1", ns, "gadgets")
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, what="gadgets to stop being served")


def test_strategic_merge_patch_on_custom_resource_is_415(api: kubernetes.client.ApiClient, kubectl: Kubectl, ns: str) -> None:
    kubernetes.client.CustomObjectsApi(api).create_namespaced_custom_object(*KD, ns, "kubedirectorclusters", _kdcluster("p"))
    proc = kubectl("patch", "kdcluster", "p", "-n", ns, "--type=strategic", "-p", '{"spec":{"app":"x"}}', check=False)
    assert proc.returncode != 0 and ("UnsupportedMediaType" in proc.stderr or "unknown format" in proc.stderr)
    # (a label: stock KubeDirector's webhook, the embedded default, makes spec.app read-only)
    kubectl("patch", "kdcluster", "p", "-n", ns, "--type=merge", "-p", '{"metadata":{"labels":{"x":"other"}}}')
    assert kubectl_json(kubectl, "get", "kdcluster", "p", "-n", ns)["metadata"]["labels"]["x"] == "other"


def test_kubectl_strict_field_validation_on_custom_resources(kubectl: Kubectl, ns: str) -> None:
    doc = (
        '{"apiVersion":"kubedirector.hpe.com/v1beta1","kind":"KubeDirectorCluster","metadata":{"name":"typo"},'
        '"spec":{"app":"centos7x","rolez":[],"roles":[{"id":"r","members":1,"resources":{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"cpu":"1","memory":"1Gi"}}}]}}'
    )
    proc = kubectl("apply", "-n", ns, "-f", "-", input=doc, check=False)
    assert proc.returncode != 0
    assert (
        'KubeDirectorCluster in version "v1beta1" cannot be handled as a KubeDirectorCluster: strict decoding '
        'error: unknown field "spec.rolez"'
    ) in proc.stderr
    # With validation off the field is pruned, as the real server does.
    kubectl("apply", "-n", ns, "--validate=false", "-f", "-", input=doc)
    assert "rolez" not in kubectl_json(kubectl, "get", "kdcluster", "typo", "-n", ns)["spec"]


def test_printer_column_with_a_jsonpath_filter(api: kubernetes.client.ApiClient, kubectl: Kubectl, ns: str) -> None:
    """KDRollout's READY column is `.status.conditions[?(@.type=="Ready")].status`, as kubectl shows it."""
    custom = kubernetes.client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(
        "gitops-kd.io",
        "v1alpha1",
        ns,
        "kdrollouts",
        {
            "apiVersion": "gitops-kd.io/v1alpha1",
            "kind": "KDRollout",
            "metadata": {"name": "r1"},
            "spec": {"app": "hello", "targetVersion": "2.0.0"},
        },
    )
    custom.patch_namespaced_custom_object_status(
        "gitops-kd.io",
        "v1alpha1",
        ns,
        "kdrollouts",
        "r1",
        {
            "status": {
                "phase": "Idle",
                "appVersion": "2.0.0",
                "conditions": [
                    {
                        "type": "Reconciling",
                        "status": "False",
                        "reason": "Done",
                        "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    },
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "Succeeded",
                        "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    },
                ],
            }
        },
    )
    lines = kubectl("get", "kdro", "r1", "-n", ns).stdout.splitlines()
    header, row = lines[0].split(), lines[1].split()
    assert row[header.index("READY")] == "True"
