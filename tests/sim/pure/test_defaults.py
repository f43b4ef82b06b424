"""Server-side defaults for the kinds the embedded cluster stores, on KubeDirector-shaped objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kdsim.defaults import apply_defaults, image_pull_policy, qos_class


def _kd_statefulset() -> dict[str, Any]:
    """What KubeDirector creates for a role: no updateStrategy, Parallel pods, one PVC template."""
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "kdss-abcde", "namespace": "default"},
        "spec": {
            "podManagementPolicy": "Parallel",
            "serviceName": "kdhs-spark",
            "replicas": 2,
            "selector": {"matchLabels": {"kubedirector.hpe.com/role": "master"}},
            "template": {
                "metadata": {"labels": {"kubedirector.hpe.com/role": "master"}},
                "spec": {
                    "initContainers": [{"name": "init", "image": "bluek8s/spark:2.4.5"}],
                    "containers": [
                        {
                            "name": "app",
                            "image": "bluek8s/spark:2.4.5",
                            "ports": [{"containerPort": 8080, "name": "http"}],
                            "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                            "livenessProbe": {"httpGet": {"port": 8080}},
                        }
                    ],
                    "volumes": [{"name": "cfg", "configMap": {"name": "c"}}, {"name": "scratch"}],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "kd-pvc"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "40Gi"}}},
                }
            ],
        },
    }


def test_statefulset_defaults_like_the_apiserver() -> None:
    sts = _kd_statefulset()
    apply_defaults("StatefulSet", "apps/v1", sts)
    spec = sts["spec"]
    assert spec["podManagementPolicy"] == "Parallel"  # kept
    assert spec["replicas"] == 2
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    pod = spec["template"]["spec"]
    assert {
        k: pod[k] for k in ("dnsPolicy", "restartPolicy", "schedulerName", "securityContext", "terminationGracePeriodSeconds")
    } == {
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
    }
    assert "enableServiceLinks" not in pod  # pods only, not templates
    app = pod["containers"][0]
    assert app["imagePullPolicy"] == "IfNotPresent"
    assert app["terminationMessagePath"] == "/dev/termination-log" and app["terminationMessagePolicy"] == "File"
    assert app["resources"] == {}
    assert app["ports"] == [{"containerPort": 8080, "name": "http", "protocol": "TCP"}]
    assert app["env"][0]["valueFrom"]["fieldRef"] == {"apiVersion": "v1", "fieldPath": "status.podIP"}
    assert app["livenessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert pod["initContainers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert pod["volumes"] == [
        {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}},
        {"name": "scratch", "emptyDir": {}},
    ]
    vct = spec["volumeClaimTemplates"][0]
    assert vct["apiVersion"] == "v1" and vct["kind"] == "PersistentVolumeClaim"
    assert vct["spec"]["volumeMode"] == "Filesystem" and vct["status"] == {"phase": "Pending"}


def test_statefulset_minimal_and_on_delete() -> None:
    sts: dict[str, Any] = {"spec": {"updateStrategy": {"type": "OnDelete"}, "template": {"spec": {"containers": []}}}}
    apply_defaults("StatefulSet", "apps/v1", sts)
    assert sts["spec"]["replicas"] == 1 and sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {"type": "OnDelete"}


@pytest.mark.parametrize(
    "kind, api_version, make",
    [
        ("StatefulSet", "apps/v1", _kd_statefulset),
        (
            "Pod",
            "v1",
            lambda: {
                "spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}
            },
        ),
        (
            "Service",
            "v1",
            lambda: {"spec": {"clusterIP": "None", "selector": {"a": "b"}, "ports": [{"port": 22, "name": "ssh"}]}},
        ),
        ("PersistentVolumeClaim", "v1", lambda: {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}),
        ("Secret", "v1", lambda: {"data": {}}),
        ("Namespace", "v1", lambda: {"metadata": {"name": "team-a"}}),
        ("Deployment", "apps/v1", lambda: {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "b"}]}}}}),
    ],
)
def test_defaulting_is_idempotent(kind: str, api_version: str, make: Any) -> None:
    once = make()
    apply_defaults(kind, api_version, once)
    twice = copy.deepcopy(once)
    apply_defaults(kind, api_version, twice)
    assert twice == once


def test_pod_defaults_include_admission_and_request_from_limits() -> None:
    pod = {"spec": {"containers": [{"name": "a", "image": "busybox", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}
    apply_defaults("Pod", "v1", pod)
    spec = pod["spec"]
    assert spec["enableServiceLinks"] is True and spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert spec["priority"] == 0 and spec["serviceAccountName"] == "default"
    assert [t["key"] for t in spec["tolerations"]] == ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    assert spec["containers"][0]["imagePullPolicy"] == "Always"
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert qos_class(spec) == "Guaranteed"
    assert qos_class({"containers": [{"name": "a"}]}) == "BestEffort"
    assert qos_class({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}) == "Burstable"


@pytest.mark.parametrize(
    "image, policy",
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("busybox:1.36", "IfNotPresent"),
        ("registry:5000/team/app", "Always"),
        ("registry:5000/team/app:2", "IfNotPresent"),
        ("app@sha256:0123", "IfNotPresent"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_service_pvc_secret_namespace_defaults() -> None:
    svc: dict[str, Any] = {"spec": {"ports": [{"port": 22, "name": "ssh"}, {"port": 80, "targetPort": "http"}]}}
    apply_defaults("Service", "v1", svc)
    assert svc["spec"] == {
        "type": "ClusterIP",
        "sessionAffinity": "None",
        "ports": [
            {"port": 22, "name": "ssh", "protocol": "TCP", "targetPort": 22},
            {"port": 80, "targetPort": "http", "protocol": "TCP"},
        ],
        "internalTrafficPolicy": "Cluster",
        "ipFamilyPolicy": "SingleStack",
        "ipFamilies": ["IPv4"],
    }
    lb: dict[str, Any] = {"spec": {"type": "LoadBalancer", "ports": [{"port": 1}]}}
    apply_defaults("Service", "v1", lb)
    assert lb["spec"]["externalTrafficPolicy"] == "Cluster" and lb["spec"]["allocateLoadBalancerNodePorts"] is True
    pvc: dict[str, Any] = {"spec": {}}
    apply_defaults("PersistentVolumeClaim", "v1", pvc)
    assert pvc == {"spec": {"volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}
    secret: dict[str, Any] = {}
    apply_defaults("Secret", "v1", secret)
    assert secret == {"type": "Opaque"}
    ns = {"metadata": {"name": "team-a"}}
    apply_defaults("Namespace", "v1", ns)
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}


def test_kinds_without_defaults_are_untouched() -> None:
    for kind, api_version in (
        ("ConfigMap", "v1"),
        ("Lease", "coordination.k8s.io/v1"),
        ("ControllerRevision", "apps/v1"),
        ("KubeDirectorCluster", "kubedirector.hpe.com/v1beta1"),
    ):
        obj = {"metadata": {"name": "x"}, "data": {"a": "b"}}
        apply_defaults(kind, api_version, obj)
        assert obj == {"metadata": {"name": "x"}, "data": {"a": "b"}}
