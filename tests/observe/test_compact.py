"""compact: the informers' transform (managedFields dropped, Pods cut to what is read, frozen once, values shared)."""

from __future__ import annotations

import json
from typing import Any

from gitops_kd.observe.collector import observed_pod
from gitops_kd.observe.compact import compact
from gitops_kd.spec.freeze import FrozenMap, freeze, thaw
from gitops_kd.spec.shared import SharedValues

SCRIPT = "set -e\n" + "echo seeding persisted dirs\n" * 50


def pod(name: str, ordinal: int) -> dict[str, Any]:
    """A Pod as a watch hands it over: a fresh json.loads each time, so no string is shared yet."""
    return json.loads(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{ordinal}",
                    "namespace": "default",
                    "uid": f"uid-{name}-{ordinal}",
                    "resourceVersion": str(100 + ordinal),
                    "creationTimestamp": "2026-12-03T10:00:00Z",
                    "labels": {
                        "kubedirector.hpe.com/role": "worker",
                        "controller-revision-hash": "r1",
                        "kubedirector.hpe.com/kdcluster": name,
                    },
                    "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}],
                },
                "spec": {
                    "initContainers": [{"name": "init", "image": "hello:1.0.0", "args": ["-c", SCRIPT]}],
                    "containers": [
                        {"name": "app", "image": "hello:1.0.0", "env": [{"name": "A", "value": "1"}]},
                        {"name": "sidecar", "image": "proxy:2"},
                    ],
                    "volumes": [{"name": "p", "persistentVolumeClaim": {"claimName": f"p-{name}-{ordinal}"}}],
                },
                "status": {
                    "phase": "Running",
                    "podIP": f"10.0.0.{ordinal}",
                    "hostIP": "10.1.0.1",
                    "qosClass": "Burstable",
                    "conditions": [
                        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-03T10:00:01Z"},
                        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-03T10:00:05Z"},
                        {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-12-03T10:00:05Z"},
                    ],
                    "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0}],
                },
            }
        )
    )


def test_a_compact_pod_observes_the_same_and_keeps_only_what_is_read() -> None:
    shared = SharedValues()
    raw = pod("c1", 0)
    small = compact(raw, shared, pod=True)
    assert observed_pod(small) == observed_pod(raw)
    assert set(small["spec"]) == {"containers"} and [c["name"] for c in small["spec"]["containers"]] == ["app"]
    assert set(small["status"]) == {"phase", "podIP", "conditions"}
    assert [c["type"] for c in small["status"]["conditions"]] == ["Ready"]  # the one condition read
    assert "managedFields" not in small["metadata"] and "managedFields" in raw["metadata"]
    assert thaw(small)["metadata"]["labels"] == raw["metadata"]["labels"]


def test_managed_fields_dropped_and_the_rest_kept_for_other_kinds() -> None:
    raw = pod("c1", 0)
    full = compact(raw, SharedValues())
    expected = json.loads(json.dumps(raw))
    del expected["metadata"]["managedFields"]
    assert thaw(full) == expected


def test_frozen_once_and_equal_values_held_once() -> None:
    shared = SharedValues()
    a, b = compact(pod("c1", 0), shared), compact(pod("c2", 1), shared)
    assert isinstance(a, FrozenMap) and freeze(a) is a  # freezing again (the observed models) copies nothing
    script_a, script_b = a["spec"]["initContainers"][0]["args"][1], b["spec"]["initContainers"][0]["args"][1]
    assert script_a == SCRIPT and script_a is script_b
    assert next(iter(a["metadata"])) is next(iter(b["metadata"]))  # keys too
    assert a["spec"]["containers"] is b["spec"]["containers"]  # equal mappings and sequences as well
    assert a["metadata"] is not b["metadata"] and a["status"] is not b["status"]  # (their uids and times differ)
    before = len(shared)
    compact({**pod("c3", 2), "metadata": {**pod("c3", 2)["metadata"], "uid": "fresh", "resourceVersion": "999"}}, shared)
    assert "fresh" not in shared and "999" not in shared  # per-version values stay out
    assert len(shared) > before  # (the new cluster's name did go in)


def test_the_string_table_is_bounded() -> None:
    shared = SharedValues(limit=10)
    for i in range(25):
        shared.share("name", f"value-{i}")
        assert len(shared) <= 10
    again = shared.share("name", "value-24")
    assert again == "value-24"


def test_values_equal_in_python_but_not_in_json_are_never_merged() -> None:
    """True == 1 == 1.0 in Python: a shared mapping must still thaw to exactly the JSON it came from."""
    shared = SharedValues()
    docs = [
        {"spec": {"x": {"a": 1}, "y": [1]}},
        {"spec": {"x": {"a": True}, "y": [True]}},
        {"spec": {"x": {"a": 1.0}, "y": [1.0]}},
        {"spec": {"x": {"a": 1}, "y": [1]}},
    ]
    made = [compact(d, shared) for d in docs]
    for doc, frozen in zip(docs, made, strict=True):
        assert json.dumps(thaw(frozen)) == json.dumps(doc)
    assert made[0]["spec"] is made[3]["spec"] and made[1]["spec"] is not made[0]["spec"]
