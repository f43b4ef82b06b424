"""kubectl against the embedded server: patch types, set image, label/annotate, describe with events, wait, delete."""

from __future__ import annotations

import subprocess

import kubernetes.client
import pytest
from apiserver_util import Kubectl, kubectl_json, wait_for

from kdsim.cluster import EmbeddedCluster

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: demo}}
spec:
  containers:
  - name: main
    image: busybox:1.36
    command: [sleep, "3600"]
  - name: side
    image: busybox:1.36
"""


def _apply_pod(kubectl: Kubectl, ns: str, name: str) -> None:
    kubectl("apply", "-n", ns, "-f", "-", input=POD.format(name=name))


def test_patch_types(kubectl: Kubectl, ns: str) -> None:
    _apply_pod(kubectl, ns, "p")
    kubectl("patch", "pod", "p", "-n", ns, "--type=merge", "-p", '{"metadata":{"labels":{"merged":"yes"}}}')
    kubectl(
        "patch",
        "pod",
        "p",
        "-n",
        ns,
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/containers/0/image","value":"busybox:1.37"}]',
    )
    # Strategic merge: containers merge by name, so "side" keeps its image.
    kubectl("patch", "pod", "p", "-n", ns, "-p", '{"spec":{"containers":[{"name":"main","image":"busybox:1.38"}]}}')
    pod = kubectl_json(kubectl, "get", "pod", "p", "-n", ns)
    assert pod["metadata"]["labels"] == {"app": "demo", "merged": "yes"}
    assert [(c["name"], c["image"]) for c in pod["spec"]["containers"]] == [("main", "busybox:1.38"), ("side", "busybox:1.36")]
    bad = kubectl(
        "patch", "pod", "p", "-n", ns, "--type=json", "-p", '[{"op":"test","path":"/spec/nodeName","value":"x"}]', check=False
    )
    assert bad.returncode != 0


def test_label_annotate_and_set_image(kubectl: Kubectl, ns: str, api: kubernetes.client.ApiClient) -> None:
    kubernetes.client.AppsV1Api(api).create_namespaced_stateful_set(
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
    kubectl("label", "sts", "web", "-n", ns, "tier=frontend")
    kubectl("annotate", "sts", "web", "-n", ns, "note=hello")
    kubectl("set", "image", "sts/web", "-n", ns, "main=nginx:1.26")
    sts = kubectl_json(kubectl, "get", "sts", "web", "-n", ns)
    assert sts["metadata"]["labels"]["tier"] == "frontend" and sts["metadata"]["annotations"]["note"] == "hello"
    assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert sts["metadata"]["generation"] == 2
    assert kubectl("get", "sts", "-n", ns, "-l", "tier=frontend", "-o", "name").stdout.strip() == "statefulset.apps/web"


def test_describe_shows_events(kubectl: Kubectl, ns: str, api: kubernetes.client.ApiClient) -> None:
    _apply_pod(kubectl, ns, "ev")
    pod = kubernetes.client.CoreV1Api(api).read_namespaced_pod("ev", ns)
    kubernetes.client.CoreV1Api(api).create_namespaced_event(
        ns,
        {
            "metadata": {"name": "ev.1"},
            "type": "Normal",
            "reason": "Pulled",
            "message": "image pulled for test",
            "involvedObject": {"kind": "Pod", "name": "ev", "namespace": ns, "uid": pod.metadata.uid, "apiVersion": "v1"},
            "source": {"component": "kubelet"},
            "count": 1,
            "firstTimestamp": pod.metadata.creation_timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "lastTimestamp": pod.metadata.creation_timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    )
    out = kubectl("describe", "pod", "ev", "-n", ns).stdout
    assert "Name:" in out and "busybox:1.36" in out
    assert "Pulled" in out and "image pulled for test" in out
    events = kubectl("get", "events", "-n", ns).stdout
    assert "pod/ev" in events and "Pulled" in events


def test_wait_for_condition_and_delete(
    cluster: EmbeddedCluster, kubectl: Kubectl, ns: str, api: kubernetes.client.ApiClient
) -> None:
    _apply_pod(kubectl, ns, "w")
    before = cluster.server.hub.count()
    waiter = subprocess.Popen(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "wait", "-n", ns, "--for=condition=Ready", "pod/w", "--timeout=30s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: cluster.server.hub.count() > before, timeout=20, what="kubectl wait to watch")
        kubernetes.client.CoreV1Api(api).patch_namespaced_pod_status(
            "w", ns, {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
        )
        out, err = waiter.communicate(timeout=30)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    assert waiter.returncode == 0, err
    assert "condition met" in out
    assert kubectl("get", "pod", "w", "-n", ns).stdout.splitlines()[1].split()[:3] == ["w", "0/2", "Running"]
    kubectl("delete", "pod", "w", "-n", ns, "--wait=false")
    kubectl("wait", "--for=delete", "pod/w", "-n", ns, "--timeout=20s")
    gone = kubectl("get", "pod", "w", "-n", ns, check=False)
    assert gone.returncode != 0 and 'pods "w" not found' in gone.stderr


def test_delete_by_label_and_all(kubectl: Kubectl, ns: str) -> None:
    for i in range(3):
        kubectl("create", "configmap", f"c{i}", "-n", ns, "--from-literal=k=v")
    kubectl("label", "cm", "c0", "c1", "-n", ns, "drop=yes")
    out = kubectl("delete", "cm", "-n", ns, "-l", "drop=yes").stdout
    assert 'configmap "c0" deleted' in out and 'configmap "c1" deleted' in out
    left = kubectl("get", "cm", "-n", ns, "-o", "name").stdout.split()
    assert "configmap/c2" in left and "configmap/c0" not in left


@pytest.mark.parametrize("resource", ["pods", "sts", "kdcluster", "svc", "pvc", "ns", "events", "leases"])
def test_kubectl_get_every_kind(kubectl: Kubectl, resource: str) -> None:
    proc = kubectl("get", resource, "-A")
    assert proc.returncode == 0


def test_server_dry_run_and_diff(kubectl: Kubectl, ns: str) -> None:
    created = kubectl("apply", "-n", ns, "--dry-run=server", "-f", "-", input=POD.format(name="dry")).stdout
    assert "created (server dry run)" in created
    assert kubectl("get", "pod", "dry", "-n", ns, check=False).returncode != 0
    _apply_pod(kubectl, ns, "dry")
    diff = kubectl("diff", "-n", ns, "-f", "-", input=POD.format(name="dry").replace("busybox:1.36", "busybox:1.37"), check=False)
    assert diff.returncode == 1 and "+    image: busybox:1.37" in diff.stdout, diff.stderr
    assert kubectl_json(kubectl, "get", "pod", "dry", "-n", ns)["spec"]["containers"][0]["image"] == "busybox:1.36"
