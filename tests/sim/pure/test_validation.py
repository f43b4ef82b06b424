"""Object validation: exact apiserver messages for the kinds the embedded cluster stores."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kdsim.defaults import apply_defaults
from kdsim.errors import ApiError
from kdsim.validation import errors_for, validate

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
STS_FORBIDDEN = (
    "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
    "forbidden"
)


def _defaulted(kind: str, api_version: str, obj: dict[str, Any]) -> dict[str, Any]:
    apply_defaults(kind, api_version, obj)
    return obj


def kd_statefulset() -> dict[str, Any]:
    labels = {"kubedirector.hpe.com/kdcluster": "spark", "kubedirector.hpe.com/role": "spark-master"}
    return _defaulted(
        "StatefulSet",
        "apps/v1",
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {
                "name": "kdss-abcde",
                "namespace": "default",
                "labels": dict(labels),
                "ownerReferences": [
                    {
                        "apiVersion": "kubedirector.hpe.com/v1beta1",
                        "kind": "KubeDirectorCluster",
                        "name": "spark",
                        "uid": "u-1",
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "podManagementPolicy": "Parallel",
                "serviceName": "kdhs-spark",
                "replicas": 1,
                "selector": {"matchLabels": dict(labels)},
                "template": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {"containers": [{"name": "app", "image": "bluek8s/spark:2.4.5"}]},
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "kd-pvc"},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "40Gi"}}},
                    }
                ],
            },
        },
    )


def _messages(kind: str, api_version: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [str(e) for e in errors_for(kind, api_version, obj, old)]


def test_valid_kubedirector_statefulset_passes_create_and_update() -> None:
    sts = kd_statefulset()
    validate("StatefulSet", "apps/v1", sts, None)
    new = copy.deepcopy(sts)
    new["spec"]["replicas"] = 3
    new["spec"]["updateStrategy"] = {"type": "OnDelete"}
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "bluek8s/spark:3.0"
    new["metadata"]["labels"]["extra"] = "yes"
    validate("StatefulSet", "apps/v1", new, sts)


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda s: s["metadata"].__setitem__("name", "Web"), [f'metadata.name: Invalid value: "Web": {SUBDOMAIN}']),
        (
            lambda s: s["spec"].__setitem__("replicas", -1),
            ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            lambda s: s["spec"]["template"]["metadata"].__setitem__("labels", {"app": "other"}),
            [
                'spec.template.metadata.labels: Invalid value: map[string]string{"app":"other"}: '
                "`selector` does not match template `labels`"
            ],
        ),
        (lambda s: s["spec"].pop("selector"), ["spec.selector: Required value"]),
        (
            lambda s: s["spec"].__setitem__("selector", {}),
            [
                "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
                "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for statefulset"
            ],
        ),
        (
            lambda s: s["metadata"].__setitem__("finalizers", ["orphan", "foregroundDeletion"]),
            [
                'metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan and '
                "foregroundDeletion cannot be both set"
            ],
        ),
        (
            lambda s: s["spec"].__setitem__("updateStrategy", {"type": "OnDelete", "rollingUpdate": {"partition": 0}}),
            [
                "spec.updateStrategy.rollingUpdate: Invalid value: apps.RollingUpdateStatefulSetStrategy{Partition:0, "
                "MaxUnavailable:(*intstr.IntOrString)(nil)}: only allowed for updateStrategy 'RollingUpdate'"
            ],
        ),
        (
            lambda s: s["spec"].__setitem__("updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": -2}}),
            ["spec.updateStrategy.rollingUpdate.partition: Invalid value: -2: must be greater than or equal to 0"],
        ),
        (
            lambda s: s["spec"].__setitem__("podManagementPolicy", "Random"),
            ["spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"],
        ),
        (
            lambda s: s["spec"]["template"]["spec"].__setitem__("restartPolicy", "Never"),
            ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'],
        ),
        (
            lambda s: s["metadata"]["labels"].__setitem__("bad key", "x"),
            [
                "metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' "
                "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ],
        ),
        (lambda s: s["metadata"].pop("namespace"), ["metadata.namespace: Required value"]),
    ],
)
def test_statefulset_create_errors(mutate: Callable[[dict[str, Any]], Any], expected: list[str]) -> None:
    sts = kd_statefulset()
    mutate(sts)
    assert _messages("StatefulSet", "apps/v1", sts) == expected


def test_statefulset_error_is_422_with_all_causes() -> None:
    sts = kd_statefulset()
    sts["spec"]["replicas"] = -1
    sts["spec"]["podManagementPolicy"] = "Random"
    with pytest.raises(ApiError) as info:
        validate("StatefulSet", "apps/v1", sts, None)
    err = info.value
    assert err.code == 422 and err.reason == "Invalid"
    assert err.message == (
        'StatefulSet.apps "kdss-abcde" is invalid: [spec.podManagementPolicy: Invalid value: '
        "\"Random\": must be 'OrderedReady' or 'Parallel', spec.replicas: Invalid value: -1: must "
        "be greater than or equal to 0]"
    )
    status = err.to_status()
    assert status["details"]["group"] == "apps" and status["details"]["kind"] == "StatefulSet"
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.podManagementPolicy", "spec.replicas"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s["spec"].__setitem__("serviceName", "other"),
        lambda s: s["spec"].__setitem__("podManagementPolicy", "OrderedReady"),
        lambda s: s["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"].__setitem__("storage", "80Gi"),
        lambda s: s["spec"].__setitem__("revisionHistoryLimit", 3),
        lambda s: s["spec"]["selector"]["matchLabels"].__setitem__("x", "y"),
    ],
)
def test_statefulset_forbidden_updates(mutate: Callable[[dict[str, Any]], Any]) -> None:
    old = kd_statefulset()
    new = copy.deepcopy(old)
    mutate(new)
    assert STS_FORBIDDEN in _messages("StatefulSet", "apps/v1", new, old)


def test_statefulset_update_may_not_change_name_or_namespace() -> None:
    old = kd_statefulset()
    new = copy.deepcopy(old)
    new["metadata"]["namespace"] = "other"
    assert _messages("StatefulSet", "apps/v1", new, old) == ['metadata.namespace: Invalid value: "other": field is immutable']


def _pod() -> dict[str, Any]:
    return _defaulted(
        "Pod",
        "v1",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "kdss-abcde-0", "namespace": "default"},
            "spec": {
                "containers": [
                    {"name": "app", "image": "bluek8s/spark:2.4.5", "volumeMounts": [{"name": "kd-pvc", "mountPath": "/etc"}]}
                ],
                "volumes": [{"name": "kd-pvc", "persistentVolumeClaim": {"claimName": "kd-pvc-kdss-abcde-0"}}],
            },
        },
    )


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda p: p["spec"].__setitem__("containers", []), ["spec.containers: Required value"]),
        (lambda p: p["spec"]["containers"][0].pop("image"), ["spec.containers[0].image: Required value"]),
        (lambda p: p["spec"]["containers"][0].pop("name"), ["spec.containers[0].name: Required value"]),
        (
            lambda p: p["spec"]["containers"].append(dict(p["spec"]["containers"][0])),
            ['spec.containers[1].name: Duplicate value: "app"'],
        ),
        (
            lambda p: p["spec"]["containers"][0]["volumeMounts"][0].__setitem__("name", "nope"),
            ['spec.containers[0].volumeMounts[0].name: Not found: "nope"'],
        ),
        (
            lambda p: p["spec"].__setitem__("restartPolicy", "Sometimes"),
            ['spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'],
        ),
        (
            lambda p: p["spec"]["containers"][0].__setitem__("ports", [{"containerPort": 70000, "protocol": "TCP"}]),
            ["spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"],
        ),
    ],
)
def test_pod_create_errors(mutate: Callable[[dict[str, Any]], Any], expected: list[str]) -> None:
    pod = _pod()
    mutate(pod)
    assert _messages("Pod", "v1", pod) == expected


def test_pod_update_allows_image_and_forbids_other_spec_changes() -> None:
    old = _pod()
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "bluek8s/spark:3.0"
    new["metadata"]["labels"] = {"a": "b"}
    assert _messages("Pod", "v1", new, old) == []
    new["spec"]["containers"][0]["command"] = ["sleep"]
    messages = _messages("Pod", "v1", new, old)
    assert len(messages) == 1
    assert messages[0].startswith(
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
        "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
    )
    more = copy.deepcopy(old)
    more["spec"]["containers"].append({"name": "b", "image": "b"})
    assert _messages("Pod", "v1", more, old) == ["spec.containers: Forbidden: pod updates may not add or remove containers"]


def _service() -> dict[str, Any]:
    return _defaulted(
        "Service",
        "v1",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kdhs-spark", "namespace": "default"},
            "spec": {
                "clusterIP": "10.96.0.12",
                "selector": {"kubedirector.hpe.com/headless": "spark"},
                "ports": [{"name": "ssh", "port": 22}, {"name": "http", "port": 8080}],
            },
        },
    )


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda s: s["metadata"].__setitem__("name", "1svc"), [f'metadata.name: Invalid value: "1svc": {DNS1035}']),
        (lambda s: s["spec"]["ports"][1].pop("name"), ["spec.ports[1].name: Required value"]),
        (lambda s: s["spec"]["ports"][1].__setitem__("name", "ssh"), ['spec.ports[1].name: Duplicate value: "ssh"']),
        (
            lambda s: s["spec"]["ports"][0].__setitem__("port", 0),
            ["spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"],
        ),
        (
            lambda s: s["spec"]["ports"][0].__setitem__("protocol", "HTTP"),
            ['spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"'],
        ),
        (
            lambda s: s["spec"].__setitem__("type", "Magic"),
            ['spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"'],
        ),
    ],
)
def test_service_create_errors(mutate: Callable[[dict[str, Any]], Any], expected: list[str]) -> None:
    svc = _service()
    mutate(svc)
    assert _messages("Service", "v1", svc) == expected


def test_service_cluster_ip_may_not_change() -> None:
    old = _service()
    new = copy.deepcopy(old)
    new["spec"]["clusterIP"] = "10.96.0.99"
    assert _messages("Service", "v1", new, old) == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.96.0.99"}: may not change once set'
    ]
    new["spec"].pop("clusterIP")
    assert _messages("Service", "v1", new, old) == []  # the server carries the allocated IP over


def _pvc(storage: str = "40Gi") -> dict[str, Any]:
    return _defaulted(
        "PersistentVolumeClaim",
        "v1",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "kd-pvc-kdss-abcde-0", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}},
        },
    )


def test_pvc_rules() -> None:
    assert _messages("PersistentVolumeClaim", "v1", _pvc()) == []
    bad = _pvc()
    bad["spec"]["accessModes"] = []
    assert _messages("PersistentVolumeClaim", "v1", bad) == [
        "spec.accessModes: Required value: at least 1 access mode is required"
    ]
    old = _pvc()
    old["status"] = {"phase": "Bound"}
    grown = _pvc("80Gi")
    grown["status"] = {"phase": "Bound"}
    assert _messages("PersistentVolumeClaim", "v1", grown, old) == []
    shrunk = _pvc("10Gi")
    shrunk["status"] = {"phase": "Bound"}
    assert _messages("PersistentVolumeClaim", "v1", shrunk, old) == [
        "spec.resources.requests.storage: Forbidden: field can not be less than previous value"
    ]
    changed = copy.deepcopy(old)
    changed["spec"]["accessModes"] = ["ReadWriteMany"]
    msgs = _messages("PersistentVolumeClaim", "v1", changed, old)
    assert len(msgs) == 1 and msgs[0].startswith(
        "spec: Forbidden: spec is immutable after creation except resources.requests for bound claims\n"
    )


def test_configmap_and_secret_rules() -> None:
    cm = {"metadata": {"name": "cfg", "namespace": "default"}, "data": {"ok.key": "1", "bad key": "2"}}
    assert _messages("ConfigMap", "v1", cm) == [
        'data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric characters, '
        "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        "'[-._a-zA-Z0-9]+')"
    ]
    old = {"metadata": {"name": "cfg", "namespace": "default"}, "data": {"a": "1"}, "immutable": True}
    new = copy.deepcopy(old)
    new["data"]["a"] = "2"
    assert _messages("ConfigMap", "v1", new, old) == ["data: Forbidden: field is immutable when `immutable` is set"]
    secret = {"metadata": {"name": "tls", "namespace": "default"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "YQ=="}}
    assert _messages("Secret", "v1", secret) == ["data[tls.key]: Required value"]
    old_secret = {"metadata": {"name": "s", "namespace": "default"}, "type": "Opaque", "data": {}}
    new_secret = dict(old_secret, type="kubernetes.io/basic-auth")
    assert _messages("Secret", "v1", new_secret, old_secret) == [
        'type: Invalid value: "kubernetes.io/basic-auth": field is immutable'
    ]


def test_controller_revision_namespace_lease_and_custom_resources() -> None:
    rev = {"metadata": {"name": "kdss-abcde-5d8f", "namespace": "default"}, "data": {"spec": {}}, "revision": 1}
    assert _messages("ControllerRevision", "apps/v1", rev) == []
    changed = dict(rev, data={"spec": {"x": 1}})
    msgs = _messages("ControllerRevision", "apps/v1", changed, rev)
    assert len(msgs) == 1 and msgs[0].startswith("data: Invalid value: ") and msgs[0].endswith(": field is immutable")
    assert _messages("ControllerRevision", "apps/v1", dict(rev, revision=2), rev) == []
    assert _messages("Namespace", "v1", {"metadata": {"name": "team.a"}}) == [
        'metadata.name: Invalid value: "team.a": must not contain dots'
    ]
    lease = {"metadata": {"name": "kubedirector", "namespace": "default"}, "spec": {"holderIdentity": "a"}}
    assert _messages("Lease", "coordination.k8s.io/v1", lease) == []
    kdc = {
        "apiVersion": "kubedirector.hpe.com/v1beta1",
        "kind": "KubeDirectorCluster",
        "metadata": {"name": "Spark_1", "namespace": "default"},
        "spec": {},
    }
    with pytest.raises(ApiError) as info:
        validate("KubeDirectorCluster", "kubedirector.hpe.com/v1beta1", kdc, None)
    assert (
        info.value.message == f'KubeDirectorCluster.kubedirector.hpe.com "Spark_1" is invalid: metadata.name: '
        f'Invalid value: "Spark_1": {SUBDOMAIN}'
    )
