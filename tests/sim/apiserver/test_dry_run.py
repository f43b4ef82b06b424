"""Server-side dry run on the embedded API server, through real kubectl on every verb: nothing is stored."""

from __future__ import annotations

import json

import kubernetes.client
import pytest
from apiserver_util import Kubectl, kubectl_json, message_of

CM = """
apiVersion: v1
kind: ConfigMap
metadata: {{name: {name}}}
data: {{a: "{value}"}}
"""
STS = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  replicas: 1
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: main, image: "nginx:1.25"}]}
"""
POD = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: main, image: "busybox:1.36"}]}
"""


def _state(kubectl: Kubectl, ns: str) -> tuple[str, list[dict[str, object]]]:
    """The server's resourceVersion (a list's) and every object of the namespace this test writes."""
    listing = kubectl_json(kubectl, "get", "configmaps,statefulsets,pods", "-n", ns)
    items = [
        {
            "kind": o["kind"],
            "name": o["metadata"]["name"],
            "rv": o["metadata"]["resourceVersion"],
            "spec": o.get("spec"),
            "data": o.get("data"),
            "labels": o["metadata"].get("labels"),
            "status": o.get("status"),
        }
        for o in listing["items"]
    ]
    rv = kubectl_json(kubectl, "get", "configmaps", "-n", ns)["metadata"]["resourceVersion"]
    return rv, sorted(items, key=lambda i: (str(i["kind"]), str(i["name"])))


def test_dry_run_stores_nothing_on_any_verb(kubectl: Kubectl, ns: str, api: kubernetes.client.ApiClient) -> None:
    """Invariant: a write with dryRun=All (query or DeleteOptions body) is checked and answered, but never stored:
    the object is unchanged, no resourceVersion is consumed (hence no watch event), on create, update, patch,
    server-side apply, delete, deletecollection and the status, scale and binding subresources."""
    kubectl("apply", "-n", ns, "-f", "-", input=CM.format(name="cm1", value="1"))
    kubectl("apply", "-n", ns, "-f", "-", input=STS)
    kubectl("apply", "-n", ns, "-f", "-", input=POD)
    before = _state(kubectl, ns)

    out = kubectl("delete", "-n", ns, "configmap/cm1", "--dry-run=server").stdout
    assert "deleted (server dry run)" in out
    kubectl("delete", "-n", ns, "pod/p", "--dry-run=server", "--grace-period=0", "--force")
    kubectl("delete", "-n", ns, "statefulset/web", "--dry-run=server", "--cascade=foreground")
    kubectl("create", "-n", ns, "configmap", "cm2", "--from-literal=a=1", "--dry-run=server")
    kubectl("replace", "-n", ns, "--dry-run=server", "-f", "-", input=CM.format(name="cm1", value="2"))
    kubectl("patch", "-n", ns, "configmap", "cm1", "--dry-run=server", "--type=merge", "-p", '{"data":{"a":"3"}}')
    kubectl("label", "-n", ns, "configmap", "cm1", "x=y", "--dry-run=server")
    kubectl("apply", "-n", ns, "--server-side", "--dry-run=server", "-f", "-", input=CM.format(name="cm1", value="4"))
    kubectl("apply", "-n", ns, "--server-side", "--dry-run=server", "-f", "-", input=CM.format(name="cm3", value="4"))
    kubectl("scale", "-n", ns, "statefulset/web", "--replicas=3", "--dry-run=server")
    kubectl(
        "patch",
        "-n",
        ns,
        "statefulset",
        "web",
        "--subresource=status",
        "--dry-run=server",
        "--type=merge",
        "-p",
        '{"status":{"replicas":7}}',
    )
    core = kubernetes.client.CoreV1Api(api)
    core.delete_collection_namespaced_config_map(ns, dry_run="All")
    core.delete_collection_namespaced_pod(ns, body=kubernetes.client.V1DeleteOptions(dry_run=["All"]))
    core.create_namespaced_pod_binding(
        "p", ns, {"metadata": {"name": "p"}, "target": {"name": "nowhere"}}, dry_run="All", _preload_content=False
    )

    assert _state(kubectl, ns) == before


@pytest.mark.parametrize(("verb", "kind"), [("create", "CreateOptions"), ("delete", "DeleteOptions")])
def test_an_unknown_dry_run_value_is_refused_as_kube_apiserver_does(
    verb: str, kind: str, ns: str, api: kubernetes.client.ApiClient
) -> None:
    """Invariant: a dryRun value other than "All" is refused (422, kube-apiserver's ValidateDryRun message) and
    nothing is written."""
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "kept"}})
    with pytest.raises(kubernetes.client.ApiException) as refused:
        if verb == "create":
            core.create_namespaced_config_map(ns, {"metadata": {"name": "new"}}, dry_run="Bogus")
        else:
            core.delete_namespaced_config_map("kept", ns, body=kubernetes.client.V1DeleteOptions(dry_run=["Bogus"]))
    assert refused.value.status == 422
    assert message_of(refused.value) == (
        f'{kind}.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{{"Bogus"}}: supported values: "All"'
    )
    assert [m.metadata.name for m in core.list_namespaced_config_map(ns).items] == ["kept"]
    assert json.loads(refused.value.body)["details"]["causes"][0]["field"] == "dryRun"
