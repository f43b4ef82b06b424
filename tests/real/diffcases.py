"""The fixed requests of the differential check: error bodies, watch 410, status subresource, StatefulSet pods."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MERGE = "application/merge-patch+json"
NO_UID = "00000000-0000-0000-0000-000000000000"
KDRO = "/apis/gitops-kd.io/v1alpha1/namespaces/{ns}/kdrollouts"
STS = "/apis/apps/v1/namespaces/{ns}/statefulsets"
CM = "/api/v1/namespaces/{ns}/configmaps"


@dataclass(frozen=True)
class Case:
    """One request; `{ns}` in path and body is the namespace. `until` repeats it (polling) until true."""

    name: str
    method: str
    path: str
    body: Any = None
    content_type: str = "application/json"
    until: Callable[[int, Any], bool] | None = field(default=None, compare=False)


def _cm(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"diff": "yes"}, **extra},
        "data": {"k": "v"},
    }


def _sts_settled(status: int, body: Any) -> bool:
    st = body.get("status") or {}
    return status == 200 and st.get("observedGeneration") == body["metadata"]["generation"] and st.get("replicas") == 2


def _two_pods(status: int, body: Any) -> bool:
    return status == 200 and len(body.get("items") or []) == 2


def _gone(status: int, body: Any) -> bool:
    return status == 200 and body.get("type") == "ERROR" and (body.get("object") or {}).get("code") == 410


STATEFULSET = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "db"},
    "spec": {
        "replicas": 2,
        "serviceName": "db",
        "podManagementPolicy": "Parallel",
        "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "app", "image": "example/db:1"}]}},
    },
}
ROLLOUT = {
    "apiVersion": "gitops-kd.io/v1alpha1",
    "kind": "KDRollout",
    "metadata": {"name": "r1"},
    "spec": {"app": "hello", "targetVersion": "1.0.0"},
    "status": {"phase": "Idle"},
}

CASES: tuple[Case, ...] = (
    Case("get missing pod: 404 NotFound", "GET", "/api/v1/namespaces/{ns}/pods/nope"),
    Case("get missing namespace: 404", "GET", "/api/v1/namespaces/nope-missing"),
    Case("unknown resource: 404", "GET", "/api/v1/namespaces/{ns}/foos"),
    Case("unknown group: 404", "GET", "/apis/nope.example.com/v1/namespaces/{ns}/things"),
    Case("create configmap: 201", "POST", CM, _cm("cm1")),
    Case("create it again: 409 AlreadyExists", "POST", CM, _cm("cm1")),
    Case("put with a stale resourceVersion: 409 Conflict", "PUT", CM + "/cm1", _cm("cm1", resourceVersion="1")),
    Case("put without resourceVersion: 200", "PUT", CM + "/cm1", _cm("cm1")),
    Case("name mismatch in put: 400", "PUT", CM + "/cm1", _cm("cm2")),
    Case("invalid name: 422 Invalid", "POST", CM, _cm("Bad_Name")),
    Case(
        "pod without containers: 422 with causes",
        "POST",
        "/api/v1/namespaces/{ns}/pods",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}},
    ),
    Case("malformed merge patch: 500 (1.20 quirk)", "PATCH", CM + "/cm1", "{not json", MERGE),
    Case("patch of a missing object: 404", "PATCH", CM + "/nope", {"data": {"a": "b"}}, MERGE),
    Case(
        "delete with a wrong uid precondition: 409",
        "DELETE",
        CM + "/cm1",
        {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": NO_UID}},
    ),
    Case("delete missing: 404", "DELETE", CM + "/nope"),
    Case("create configmap 2: 201", "POST", CM, _cm("cm2")),
    Case(
        "dry-run delete (dryRun in the DeleteOptions body): 200, nothing deleted",
        "DELETE",
        CM + "/cm2",
        {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]},
    ),
    Case("get after the dry-run delete: still there", "GET", CM + "/cm2"),
    Case("dry-run create: 201, nothing created", "POST", CM + "?dryRun=All", _cm("cm3")),
    Case("get after the dry-run create: 404", "GET", CM + "/cm3"),
    Case("create with an unknown dryRun value: 422 on CreateOptions", "POST", CM + "?dryRun=Bogus", _cm("cm3")),
    Case(
        "delete with an unknown dryRun value: 422 on DeleteOptions",
        "DELETE",
        CM + "/cm2",
        {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["Bogus"]},
    ),
    Case("list with limit=1: continue token", "GET", CM + "?limit=1"),
    Case("watch from resourceVersion 1, served by the watch cache: ADDED", "GET", CM + "?watch=1&resourceVersion=1"),
    Case(
        "create a podtemplate (not watch-cached, see controlplane)",
        "POST",
        "/api/v1/namespaces/{ns}/podtemplates",
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "pt"},
            "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    ),
    Case(
        "watch from a compacted resourceVersion: ERROR event 410 Expired",
        "GET",
        "/api/v1/namespaces/{ns}/podtemplates?watch=1&resourceVersion=1",
        until=_gone,
    ),
    Case("deleteCollection by label: the deleted list", "DELETE", CM + "?labelSelector=diff%3Dyes"),
    Case("create KDRollout with status: status dropped", "POST", KDRO, ROLLOUT),
    Case("spec patch: generation 2", "PATCH", KDRO + "/r1", {"spec": {"targetVersion": "2.0.0"}}, MERGE),
    Case(
        "status patch: generation stays",
        "PATCH",
        KDRO + "/r1/status",
        {"status": {"observedGeneration": 2, "phase": "Upgrading"}},
        MERGE,
    ),
    Case("status through the main resource: ignored", "PATCH", KDRO + "/r1", {"status": {"phase": "Stalled"}}, MERGE),
    Case("status enum violation: 422", "PATCH", KDRO + "/r1/status", {"status": {"phase": "Bogus"}}, MERGE),
    Case("spec missing a required field: 422", "POST", KDRO, {**ROLLOUT, "metadata": {"name": "r2"}, "spec": {"app": "hello"}}),
    Case("create statefulset: 201", "POST", STS, STATEFULSET),
    Case("statefulset settled: observedGeneration, replicas", "GET", STS + "/db", until=_sts_settled),
    Case(
        "its pods: names, labels, owner, hostname", "GET", "/api/v1/namespaces/{ns}/pods?labelSelector=app%3Ddb", until=_two_pods
    ),
    Case("its controller revisions", "GET", "/apis/apps/v1/namespaces/{ns}/controllerrevisions"),
    Case(
        "nodePort out of range: 422",
        "POST",
        "/api/v1/namespaces/{ns}/services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "np"},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]},
        },
    ),
    Case(
        "Endpoints with a loopback address: 422",
        "POST",
        "/api/v1/namespaces/{ns}/endpoints",
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "lo"},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": 9443}]}],
        },
    ),
)
