"""PATCH semantics: JSON patch, merge patch and strategic merge patch bodies as kubectl sends them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kdsim.errors import ApiError
from kdsim.patch import apply_patch

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSONP = "application/json-patch+json"


def _sts() -> dict[str, Any]:
    """A StatefulSet shaped like the one KubeDirector renders for a role."""
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": "kdss-abcde",
            "namespace": "default",
            "labels": {"kubedirector.hpe.com/kdcluster": "spark", "kubedirector.hpe.com/role": "master"},
            "ownerReferences": [
                {
                    "apiVersion": "kubedirector.hpe.com/v1beta1",
                    "kind": "KubeDirectorCluster",
                    "name": "spark",
                    "uid": "u-1",
                    "controller": True,
                }
            ],
            "finalizers": ["a", "b"],
        },
        "spec": {
            "replicas": 1,
            "serviceName": "kdhs-spark",
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"kubedirector.hpe.com/role": "master"}},
            "template": {
                "metadata": {"labels": {"kubedirector.hpe.com/role": "master"}},
                "spec": {
                    "initContainers": [{"name": "init", "image": "spark:1"}],
                    "containers": [
                        {
                            "name": "app",
                            "image": "spark:1",
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                            "ports": [{"containerPort": 8080, "name": "http"}],
                            "volumeMounts": [{"mountPath": "/etc", "name": "pvc", "subPath": "etc"}],
                        },
                        {"name": "side", "image": "side:1"},
                    ],
                    "volumes": [{"name": "cfg", "configMap": {"name": "c"}}],
                },
            },
            "volumeClaimTemplates": [{"metadata": {"name": "pvc"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}],
        },
    }


def _patch(
    obj: dict[str, Any], body: Any, ctype: str = SMP, kind: str = "StatefulSet", api_version: str = "apps/v1"
) -> dict[str, Any]:
    return apply_patch(obj, json.dumps(body).encode(), ctype, kind=kind, api_version=api_version)


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"]["template"]["spec"]["containers"]


def test_original_is_never_mutated() -> None:
    sts = _sts()
    before = copy.deepcopy(sts)
    _patch(sts, {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "spark:2"}]}}}})
    _patch(sts, [{"op": "replace", "path": "/spec/replicas", "value": 3}], JSONP)
    _patch(sts, {"spec": {"replicas": None}}, MERGE)
    assert sts == before


def test_set_image_merges_container_by_name_and_keeps_the_rest() -> None:
    # kubectl set image app=spark:2 sends a two-way SMP with $setElementOrder.
    body = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "app"}, {"name": "side"}],
                    "containers": [{"image": "spark:2", "name": "app"}],
                }
            }
        }
    }
    out = _containers(_patch(_sts(), body))
    assert [c["name"] for c in out] == ["app", "side"]
    assert out[0]["image"] == "spark:2" and out[0]["env"] == _sts()["spec"]["template"]["spec"]["containers"][0]["env"]
    assert out[1] == {"name": "side", "image": "side:1"}


def test_new_list_item_without_order_goes_first_like_apimachinery() -> None:
    out = _containers(_patch(_sts(), {"spec": {"template": {"spec": {"containers": [{"name": "new", "image": "n"}]}}}}))
    assert [c["name"] for c in out] == ["new", "app", "side"]


def test_apply_removal_with_delete_directive_and_element_order() -> None:
    body = {
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "app"}],
                    "containers": [
                        {"$patch": "delete", "name": "side"},
                        {"name": "app", "$setElementOrder/env": [{"name": "A"}], "env": [{"$patch": "delete", "name": "B"}]},
                    ],
                }
            }
        },
    }
    out = _patch(_sts(), body)
    assert [c["name"] for c in _containers(out)] == ["app"]
    assert _containers(out)[0]["env"] == [{"name": "A", "value": "1"}]
    assert out["metadata"]["annotations"] == {"kubectl.kubernetes.io/last-applied-configuration": "{}"}


@pytest.mark.parametrize(
    "body, path, expected",
    [
        (
            {"spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "C", "value": "3"}]}]}}}},
            ("spec", "template", "spec", "containers", 0, "env"),
            [{"name": "C", "value": "3"}, {"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        ),
        (
            {"spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "9"}]}]}}}},
            ("spec", "template", "spec", "containers", 0, "env"),
            [{"name": "A", "value": "9"}, {"name": "B", "value": "2"}],
        ),
        (
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 8080, "protocol": "TCP"}]}]}}
                }
            },
            ("spec", "template", "spec", "containers", 0, "ports"),
            [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        ),
        (
            {
                "spec": {
                    "template": {
                        "spec": {"containers": [{"name": "app", "volumeMounts": [{"mountPath": "/etc", "readOnly": True}]}]}
                    }
                }
            },
            ("spec", "template", "spec", "containers", 0, "volumeMounts"),
            [{"mountPath": "/etc", "name": "pvc", "subPath": "etc", "readOnly": True}],
        ),
        (
            {"spec": {"template": {"spec": {"initContainers": [{"name": "init", "image": "spark:2"}]}}}},
            ("spec", "template", "spec", "initContainers"),
            [{"name": "init", "image": "spark:2"}],
        ),
        (
            {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "app", "command": ["a"]},
                            ]
                        }
                    }
                }
            },
            ("spec", "template", "spec", "containers", 0, "command"),
            ["a"],
        ),
        ({"metadata": {"finalizers": ["c"]}}, ("metadata", "finalizers"), ["c", "a", "b"]),
        ({"metadata": {"finalizers": ["b", "c"]}}, ("metadata", "finalizers"), ["a", "b", "c"]),
        ({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, ("metadata", "finalizers"), ["b"]),
        ({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}, ("metadata", "finalizers"), ["b", "a"]),
        (
            {"metadata": {"ownerReferences": [{"uid": "u-1", "blockOwnerDeletion": True}]}},
            ("metadata", "ownerReferences", 0, "blockOwnerDeletion"),
            True,
        ),
        (
            {"spec": {"volumeClaimTemplates": [{"metadata": {"name": "other"}}]}},  # no patch strategy: replaced
            ("spec", "volumeClaimTemplates"),
            [{"metadata": {"name": "other"}}],
        ),
        (
            {"spec": {"selector": {"$patch": "replace", "matchLabels": {"x": "y"}}}},
            ("spec", "selector"),
            {"matchLabels": {"x": "y"}},
        ),
        (
            {"spec": {"template": {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "o"}]}}}},
            ("spec", "template", "spec", "containers"),
            [{"name": "only", "image": "o"}],
        ),
        (
            {
                "spec": {
                    "template": {
                        "spec": {"volumes": [{"name": "cfg", "$retainKeys": ["name", "secret"], "secret": {"secretName": "s"}}]}
                    }
                }
            },
            ("spec", "template", "spec", "volumes"),
            [{"name": "cfg", "secret": {"secretName": "s"}}],
        ),
        (
            {"metadata": {"labels": {"kubedirector.hpe.com/role": None, "x": "y"}}},
            ("metadata", "labels"),
            {"kubedirector.hpe.com/kdcluster": "spark", "x": "y"},
        ),
        ({"spec": {"replicas": 3}}, ("spec", "replicas"), 3),
    ],
)
def test_strategic_merge_table(body: dict[str, Any], path: tuple[Any, ...], expected: Any) -> None:
    node: Any = _patch(_sts(), body)
    for part in path:
        node = node[part]
    assert node == expected


def test_service_ports_merge_by_port_and_pod_conditions_by_type() -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kdhs-spark"},
        "spec": {"ports": [{"port": 80, "name": "http", "targetPort": 8080}, {"port": 22, "name": "ssh"}]},
    }
    out = _patch(svc, {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}, kind="Service", api_version="v1")
    assert out["spec"]["ports"] == [{"port": 80, "name": "http", "targetPort": 9090}, {"port": 22, "name": "ssh"}]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Initialized", "status": "True"}]},
    }
    out = _patch(pod, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, kind="Pod", api_version="v1")
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}]


def test_merge_patch_replaces_lists_and_deletes_nulls() -> None:
    out = _patch(
        _sts(),
        {
            "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "x"}]}}},
            "metadata": {"labels": {"kubedirector.hpe.com/role": None}},
        },
        MERGE,
    )
    assert _containers(out) == [{"name": "app", "image": "x"}]
    assert out["metadata"]["labels"] == {"kubedirector.hpe.com/kdcluster": "spark"}


def test_json_patch_operations() -> None:
    ops = [
        {"op": "test", "path": "/spec/replicas", "value": 1},
        {"op": "replace", "path": "/spec/replicas", "value": 2},
        {"op": "add", "path": "/metadata/labels/new~1key", "value": "v"},
        {"op": "remove", "path": "/spec/template/spec/containers/1"},
        {"op": "add", "path": "/spec/template/spec/containers/-", "value": {"name": "z", "image": "z"}},
        {"op": "copy", "from": "/spec/serviceName", "path": "/metadata/annotations"},
        {"op": "move", "from": "/metadata/annotations", "path": "/metadata/labels/moved"},
    ]
    out = _patch(_sts(), ops, JSONP)
    assert out["spec"]["replicas"] == 2
    assert out["metadata"]["labels"]["new/key"] == "v" and out["metadata"]["labels"]["moved"] == "kdhs-spark"
    assert [c["name"] for c in _containers(out)] == ["app", "z"]
    assert "annotations" not in out["metadata"]


@pytest.mark.parametrize(
    "ops, cause",
    [
        ([{"op": "test", "path": "/spec/replicas", "value": 5}], "testing value /spec/replicas failed: test failed"),
        (
            [{"op": "remove", "path": "/metadata/labels/nope"}],
            "error in remove for path: '/metadata/labels/nope': Unable to remove nonexistent key: nope: missing value",
        ),
        (
            [{"op": "add", "path": "/nope/deeper/x", "value": 1}],
            'add operation does not apply: doc is missing path: "/nope/deeper/x": missing value',
        ),
        (
            [{"op": "replace", "path": "/spec/template/spec/containers/7", "value": {}}],
            "replace operation does not apply: doc is missing key: /spec/template/spec/containers/7: missing value",
        ),
        ([{"op": "frobnicate", "path": "/spec"}], "Unexpected kind: frobnicate"),
    ],
)
def test_json_patch_failures_are_422_with_the_apiserver_wording(ops: list[Any], cause: str) -> None:
    with pytest.raises(ApiError) as info:
        _patch(_sts(), ops, JSONP)
    err = info.value
    assert err.code == 422 and err.reason == "Invalid"
    assert err.message == "the server rejected our request due to an error in our request"
    assert [c.message for c in err.causes] == [cause]


def test_custom_resources_refuse_strategic_merge_patch_with_415() -> None:
    kdc = {
        "apiVersion": "kubedirector.hpe.com/v1beta1",
        "kind": "KubeDirectorCluster",
        "metadata": {"name": "s"},
        "spec": {"app": "spark245", "roles": [{"id": "a"}]},
    }
    with pytest.raises(ApiError) as info:
        _patch(kdc, {"spec": {"app": "x"}}, SMP, kind="KubeDirectorCluster", api_version="kubedirector.hpe.com/v1beta1")
    assert info.value.code == 415 and info.value.reason == "UnsupportedMediaType"
    assert info.value.message == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml"
    )
    out = _patch(
        kdc,
        {"spec": {"roles": [{"id": "b"}]}},
        MERGE + "; charset=utf-8",
        kind="KubeDirectorCluster",
        api_version="kubedirector.hpe.com/v1beta1",
    )
    assert out["spec"]["roles"] == [{"id": "b"}]


def test_unknown_content_type_is_415_for_builtins() -> None:
    with pytest.raises(ApiError) as info:
        _patch(_sts(), {}, "text/plain")
    assert info.value.code == 415
    assert info.value.message.endswith(
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json, application/apply-patch+yaml"
    )


def test_bad_bodies_are_400() -> None:
    for ctype in (SMP, MERGE, JSONP):
        with pytest.raises(ApiError) as info:
            apply_patch(_sts(), b"{not json", ctype, kind="StatefulSet", api_version="apps/v1")
        assert info.value.code == 400
    with pytest.raises(ApiError) as info:
        _patch(_sts(), {"spec": {"template": {"spec": {"containers": [{"image": "no-name"}]}}}})
    assert info.value.code == 400 and "does not contain declared merge key: name" in info.value.message


def test_scale_and_label_patches_like_kubectl() -> None:
    assert _patch(_sts(), {"spec": {"replicas": 0}}, MERGE)["spec"]["replicas"] == 0
    out = _patch(_sts(), {"metadata": {"labels": {"team": "data"}, "annotations": {"note": "x"}}})
    assert out["metadata"]["labels"]["team"] == "data" and out["metadata"]["annotations"] == {"note": "x"}


def test_exact_client_side_apply_body_captured_from_kubectl_1_32() -> None:
    # kubectl apply of a manifest that drops env B and container `side` and bumps the image sends exactly this.
    body = (
        '{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"app"}],"containers":['
        '{"$setElementOrder/env":[{"name":"A"}],"env":[{"$patch":"delete","name":"B"}],"image":"app:3",'
        '"name":"app"},{"$patch":"delete","name":"side"}]}}}}'
    )
    out = apply_patch(_sts(), body.encode(), SMP, kind="StatefulSet", api_version="apps/v1")
    app = _containers(out)
    assert [c["name"] for c in app] == ["app"]
    assert app[0]["image"] == "app:3" and app[0]["env"] == [{"name": "A", "value": "1"}]
    assert app[0]["ports"] == _sts()["spec"]["template"]["spec"]["containers"][0]["ports"]  # untouched fields stay


def test_json_patch_failure_status_body_matches_the_apiserver() -> None:
    with pytest.raises(ApiError) as info:
        _patch(_sts(), [{"op": "test", "path": "/spec/replicas", "value": 5}], JSONP)
    assert info.value.to_status()["details"] == {
        "causes": [
            # metav1.StatusCause's field is `json:"field,omitempty"`: an empty field is not sent
            {"reason": "UnexpectedServerResponse", "message": "testing value /spec/replicas failed: test failed"}
        ]
    }


def test_json_patch_test_op_compares_json_values() -> None:
    ok = [
        {"op": "test", "path": "/spec/replicas", "value": 1.0},
        {"op": "test", "path": "/spec/selector", "value": {"matchLabels": {"kubedirector.hpe.com/role": "master"}}},
    ]
    assert _patch(_sts(), ok, JSONP)["spec"]["replicas"] == 1
    with pytest.raises(ApiError):
        _patch(_sts(), [{"op": "test", "path": "/spec/replicas", "value": True}], JSONP)
