"""Strategic-merge metadata of the built-in kinds: per field its patchStrategy, patchMergeKey and child schema."""

from __future__ import annotations

Schema = dict[str, tuple[str, str, "Schema | None"]]
_OBJECT_META: Schema = {"finalizers": ("merge", "", None), "ownerReferences": ("merge", "uid", None)}
_CONTAINER: Schema = {
    "ports": ("merge", "containerPort", None),
    "env": ("merge", "name", None),
    "volumeMounts": ("merge", "mountPath", None),
    "volumeDevices": ("merge", "devicePath", None),
}
_POD_SPEC: Schema = {
    "containers": ("merge", "name", _CONTAINER),
    "initContainers": ("merge", "name", _CONTAINER),
    "ephemeralContainers": ("merge", "name", _CONTAINER),
    "volumes": ("merge,retainKeys", "name", None),
    "imagePullSecrets": ("merge", "name", None),
    "hostAliases": ("merge", "ip", None),
    "topologySpreadConstraints": ("merge", "topologyKey", None),
    "schedulingGates": ("merge", "name", None),
    "resourceClaims": ("merge,retainKeys", "name", None),
}
_CONDITIONS: Schema = {"conditions": ("merge", "type", None)}
_TEMPLATE: Schema = {"metadata": ("", "", _OBJECT_META), "spec": ("", "", _POD_SPEC)}
_WORKLOAD: Schema = {
    "metadata": ("", "", _OBJECT_META),
    "spec": ("", "", {"template": ("", "", _TEMPLATE)}),
    "status": ("", "", _CONDITIONS),
}
_JOB_SPEC: Schema = {"template": ("", "", _TEMPLATE)}
_KIND_SCHEMAS: dict[str, Schema] = {
    "Pod": {
        "metadata": ("", "", _OBJECT_META),
        "spec": ("", "", _POD_SPEC),
        "status": ("", "", {"conditions": ("merge", "type", None), "podIPs": ("merge", "ip", None)}),
    },
    "PodTemplate": {"metadata": ("", "", _OBJECT_META), "template": ("", "", _TEMPLATE)},
    "StatefulSet": _WORKLOAD,
    "Deployment": {**_WORKLOAD, "spec": ("", "", {"template": ("", "", _TEMPLATE), "strategy": ("retainKeys", "", None)})},
    "ReplicaSet": _WORKLOAD,
    "DaemonSet": _WORKLOAD,
    "ReplicationController": _WORKLOAD,
    "Job": {"metadata": ("", "", _OBJECT_META), "spec": ("", "", _JOB_SPEC), "status": ("", "", _CONDITIONS)},
    "Service": {
        "metadata": ("", "", _OBJECT_META),
        "spec": ("", "", {"ports": ("merge", "port", None)}),
        "status": ("", "", _CONDITIONS),
    },
    "ValidatingWebhookConfiguration": {"metadata": ("", "", _OBJECT_META), "webhooks": ("merge", "name", None)},
    "Node": {
        "metadata": ("", "", _OBJECT_META),
        "status": ("", "", {"conditions": ("merge", "type", None), "addresses": ("merge", "type", None)}),
    },
}
_DEFAULT_SCHEMA: Schema = {"metadata": ("", "", _OBJECT_META), "status": ("", "", _CONDITIONS)}


def schema_for(kind: str) -> Schema:
    """The strategic-merge schema of a built-in kind (metadata and conditions only for others)."""
    return _KIND_SCHEMAS.get(kind, _DEFAULT_SCHEMA)
