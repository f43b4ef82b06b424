"""Field defaults the real kube-apiserver applies on create/update of built-in kinds (idempotent)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]

_DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]


def _sub(obj: Obj, key: str) -> Obj:
    """obj[key] as a dict, created when absent or null."""
    value = obj.get(key)
    if not isinstance(value, dict):
        value = {}
        obj[key] = value
    return value


def image_pull_policy(image: str) -> str:
    """Always for `:latest` or an untagged image without digest, else IfNotPresent."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return "Always"
    return "Always" if last.rsplit(":", 1)[1] == "latest" else "IfNotPresent"


def _probe(probe: Obj) -> None:
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    _handler(probe)


def _handler(handler: Obj) -> None:
    http = handler.get("httpGet")
    if isinstance(http, dict):
        http.setdefault("path", "/")
        http.setdefault("scheme", "HTTP")


def _env(env: list[Any]) -> None:
    for var in env:
        ref = ((var or {}).get("valueFrom") or {}).get("fieldRef")
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")


def _container(c: Obj) -> None:
    if "image" in c and isinstance(c["image"], str) and not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = image_pull_policy(c["image"])
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    if "resources" not in c:
        c["resources"] = {}
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    _env(c.get("env") or [])
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(c.get(key), dict):
            _probe(c[key])
    for hook in (c.get("lifecycle") or {}).values():
        if isinstance(hook, dict):
            _handler(hook)


def _volume(v: Obj) -> None:
    sources = [k for k in v if k != "name"]
    if not sources:
        v["emptyDir"] = {}
    for key in ("configMap", "secret", "projected", "downwardAPI"):
        if isinstance(v.get(key), dict):
            v[key].setdefault("defaultMode", 420)
    if isinstance(v.get("hostPath"), dict):
        v["hostPath"].setdefault("type", "")
    for item in (v.get("downwardAPI") or {}).get("items") or []:
        if isinstance(item.get("fieldRef"), dict):
            item["fieldRef"].setdefault("apiVersion", "v1")


def pod_spec(spec: Obj) -> None:
    """SetDefaults_PodSpec and its containers/volumes (shared by pods and pod templates)."""
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("restartPolicy", "Always")
    if not isinstance(spec.get("securityContext"), dict):
        spec["securityContext"] = {}
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _container(c)
    for v in spec.get("volumes") or []:
        if isinstance(v, dict):
            _volume(v)


def _pod(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    pod_spec(spec)
    spec.setdefault("enableServiceLinks", True)
    # admission plugins every real cluster runs on pod create: Priority, ServiceAccount, DefaultTolerationSeconds
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    tolerations = spec.setdefault("tolerations", [])
    keys = {t.get("key") for t in tolerations if isinstance(t, dict)}
    for default in _DEFAULT_TOLERATIONS:
        if default["key"] not in keys:
            tolerations.append(dict(default))
    for c in spec.get("containers") or []:
        resources = c.get("resources") or {}
        limits = resources.get("limits") or {}
        if limits:
            requests = resources.setdefault("requests", {})
            for name, quantity in limits.items():
                requests.setdefault(name, quantity)


def qos_class(spec: Obj) -> str:
    """The pod's status.qosClass (the server sets it on create): Guaranteed, Burstable or BestEffort."""
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    any_set, guaranteed = False, True
    for c in containers:
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        any_set = any_set or bool(limits or requests)
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _template(obj: Obj) -> None:
    template = _sub(obj, "template")
    pod_spec(_sub(template, "spec"))


def _pvc(pvc: Obj, embedded: bool = False) -> None:
    if embedded:
        pvc.setdefault("apiVersion", "v1")
        pvc.setdefault("kind", "PersistentVolumeClaim")
    _sub(pvc, "spec").setdefault("volumeMode", "Filesystem")
    _sub(pvc, "status").setdefault("phase", "Pending")


def _statefulset(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = _sub(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        _sub(strategy, "rollingUpdate").setdefault("partition", 0)
    policy = _sub(spec, "persistentVolumeClaimRetentionPolicy")
    policy.setdefault("whenDeleted", "Retain")
    policy.setdefault("whenScaled", "Retain")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    spec.setdefault("revisionHistoryLimit", 10)
    _template(spec)
    for vct in spec.get("volumeClaimTemplates") or []:
        if isinstance(vct, dict):
            _pvc(vct, embedded=True)


def _deployment(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = _sub(spec, "strategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _sub(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _template(spec)


def _service(obj: Obj) -> None:
    spec = _sub(obj, "spec")
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["sessionAffinity"] == "ClientIP":
        config = _sub(_sub(spec, "sessionAffinityConfig"), "clientIP")
        config.setdefault("timeoutSeconds", 10800)
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
    if spec["type"] == "ExternalName":
        return
    if spec["type"] in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    spec.setdefault("internalTrafficPolicy", "Cluster")
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("ipFamilies", ["IPv4"])


def _secret(obj: Obj) -> None:
    if not obj.get("type"):
        obj["type"] = "Opaque"


def _namespace(obj: Obj) -> None:
    name = (obj.get("metadata") or {}).get("name")
    if name:
        _sub(_sub(obj, "metadata"), "labels").setdefault("kubernetes.io/metadata.name", name)
    _sub(obj, "spec").setdefault("finalizers", ["kubernetes"])
    _sub(obj, "status").setdefault("phase", "Active")


def _endpoints(obj: Obj) -> None:
    for subset in obj.get("subsets") or []:
        for port in (subset or {}).get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


_BY_KIND: dict[str, Callable[[Obj], None]] = {
    "StatefulSet": _statefulset,
    "Deployment": _deployment,
    "Pod": _pod,
    "PodTemplate": _template,
    "ReplicaSet": lambda o: _template(_sub(o, "spec")),
    "DaemonSet": lambda o: _template(_sub(o, "spec")),
    "Job": lambda o: _template(_sub(o, "spec")),
    "Service": _service,
    "PersistentVolumeClaim": _pvc,
    "Secret": _secret,
    "Namespace": _namespace,
    "Endpoints": _endpoints,
}


def apply_defaults(kind: str, api_version: str, obj: dict[str, Any]) -> None:
    """Fill in what the apiserver defaults for `kind`, in place; applying twice changes nothing."""
    handler = _BY_KIND.get(kind)
    if handler is not None and isinstance(obj, dict):
        handler(obj)
