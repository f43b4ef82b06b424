"""CRD structural schema validation, pruning and defaulting against the real KubeDirector CRDs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kdcrds import KDAPP_CRD, KDCLUSTER_CRD, kubedirector_crd
from kubeplumb.structural import Violation, unknown_fields, validate


def _schema(filename: str) -> dict[str, Any]:
    return kubedirector_crd(filename)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


APP = _schema(KDAPP_CRD)
CLUSTER = _schema(KDCLUSTER_CRD)


def _examples(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(folder.iterdir()):
        docs = [json.loads(path.read_text())] if path.suffix == ".json" else yaml.safe_load_all(path.read_text())
        out.extend((path.name, d) for d in docs if d)
    return out


def _cluster() -> dict[str, Any]:
    return {
        "apiVersion": "kubedirector.hpe.com/v1beta1",
        "kind": "KubeDirectorCluster",
        "metadata": {"name": "spark"},
        "spec": {
            "app": "spark245",
            "roles": [
                {
                    "id": "spark-master",
                    "members": 1,
                    "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}},
                },
            ],
        },
    }


def test_every_shared_example_validates_with_zero_violations(kd_shared: Path) -> None:
    examples = _examples(kd_shared / "catalog") + _examples(kd_shared / "clusters")
    assert len(examples) >= 12
    for name, doc in examples:
        schema = APP if doc["kind"] == "KubeDirectorApp" else CLUSTER
        assert validate(schema, doc) == [], name
        assert unknown_fields(schema, doc) == [], name


def _messages(schema: dict[str, Any], obj: object) -> list[str]:
    return [str(v) for v in validate(schema, obj)]


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda o: o["spec"].pop("app"), ["spec.app: Required value"]),
        (
            lambda o: o["spec"]["roles"][0].__setitem__("members", "three"),
            ['spec.roles[0].members: Invalid value: "string": spec.roles[0].members in body must be of type integer: "string"'],
        ),
        (
            lambda o: o["spec"]["roles"][0].__setitem__("members", -1),
            ["spec.roles[0].members: Invalid value: -1: spec.roles[0].members in body should be greater than or equal to 0"],
        ),
        (
            lambda o: o["spec"]["roles"][0].__setitem__("members", 1.5),
            ['spec.roles[0].members: Invalid value: "number": spec.roles[0].members in body must be of type integer: "number"'],
        ),
        (
            lambda o: o["spec"]["roles"][0].__setitem__("id", ""),
            ['spec.roles[0].id: Invalid value: "": spec.roles[0].id in body should be at least 1 chars long'],
        ),
        (
            lambda o: o["spec"]["roles"][0].__setitem__("id", "x" * 64),
            ["spec.roles[0].id: Too long: may not be more than 63 bytes"],
        ),
        (
            lambda o: o["spec"]["roles"][0]["resources"]["limits"].__setitem__("memory", "lots"),
            [
                'spec.roles[0].resources.limits.memory: Invalid value: "lots": spec.roles[0].resources.limits.memory '
                "in body should match '^([0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            ],
        ),
        (
            lambda o: o["spec"]["roles"][0]["resources"]["limits"].pop("cpu"),
            ["spec.roles[0].resources.limits.cpu: Required value"],
        ),
        (
            lambda o: o["spec"].__setitem__("roles", {"id": "x"}),
            ['spec.roles: Invalid value: "object": spec.roles in body must be of type array: "object"'],
        ),
        (
            lambda o: o["spec"].__setitem__("app", None),
            ['spec.app: Invalid value: "null": spec.app in body must be of type string: "null"'],
        ),
        (lambda o: o["spec"]["roles"][0].__setitem__("storage", None), []),  # nullable
    ],
)
def test_crafted_bad_clusters(mutate: Any, expected: list[str]) -> None:
    obj = _cluster()
    mutate(obj)
    assert _messages(CLUSTER, obj) == expected


def test_all_violations_are_reported_with_reasons() -> None:
    obj = _cluster()
    obj["spec"].pop("app")
    obj["spec"]["roles"][0]["members"] = "x"
    got = validate(CLUSTER, obj)
    assert [(v.path, v.reason) for v in got] == [
        ("spec.app", "FieldValueRequired"),
        ("spec.roles[0].members", "FieldValueTypeInvalid"),
    ]
    assert isinstance(got[0], Violation) and got[0].message == "Required value"


def test_app_schema_minimum_and_required() -> None:
    app = {
        "apiVersion": "kubedirector.hpe.com/v1beta1",
        "kind": "KubeDirectorApp",
        "metadata": {"name": "a"},
        "spec": {
            "label": {"name": "A"},
            "distroID": "d",
            "version": "1",
            "configSchemaVersion": 6,
            "config": {"roleServices": [], "selectedRoles": []},
            "roles": [],
        },
    }
    app["metadata"]["name"] = "n" * 64
    msgs = _messages(APP, app)
    assert "metadata.name: Too long: may not be more than 63 bytes" in msgs
    assert (
        "spec.configSchemaVersion: Invalid value: 6: spec.configSchemaVersion in body should be greater "
        "than or equal to 7" in msgs
    )


SMALL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "port": {"type": "integer", "format": "int32", "maximum": 65535},
                "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
                "size": {"x-kubernetes-int-or-string": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "nested": {"type": "object", "default": {}, "properties": {"n": {"type": "integer", "default": 3}}},
                "opt": {"type": "string", "nullable": True, "default": "x"},
                "either": {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
                "pod": {"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    },
}


@pytest.mark.parametrize(
    "spec, expected",
    [
        ({"mode": "c"}, ['spec.mode: Unsupported value: "c": supported values: "a", "b"']),
        ({"port": 70000}, ["spec.port: Invalid value: 70000: spec.port in body should be less than or equal to 65535"]),
        ({"tags": ["a", "b", "c"]}, ["spec.tags: Too many: 3: must have at most 2 items"]),
        ({"tags": []}, ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]),
        ({"tags": ["a", 1]}, ['spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer"']),
        ({"size": 3}, []),
        ({"size": "3Gi"}, []),
        ({"size": True}, ['spec.size: Invalid value: "boolean": spec.size in body must be of type integer,string: "boolean"']),
        (
            {"labels": {"a": 1}},
            ['spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"'],
        ),
        ({"free": {"anything": [1, {"x": None}]}}, []),
        ({"either": "bee"}, []),
        (
            {"either": "cee"},
            [
                'spec.either: Invalid value: "": spec.either in body must validate at least one schema (anyOf)',
                "spec.either: Invalid value: \"cee\": spec.either in body should match '^a'",
            ],
        ),
        ({"pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}}, []),
        ({"pod": {"kind": "Pod"}}, ["spec.pod.apiVersion: Required value: must not be empty"]),
    ],
)
def test_small_schema_keywords(spec: dict[str, Any], expected: list[str]) -> None:
    assert _messages(SMALL, {"spec": spec}) == expected


def test_int32_range() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}}
    assert [v.path for v in validate(schema, {"n": 2**31})] == ["n"]
    assert validate(schema, {"n": 2**31 - 1}) == []


def test_unknown_fields_do_not_count_preserved_or_meta() -> None:
    obj = {
        "apiVersion": "x/v1",
        "kind": "K",
        "metadata": {"name": "n", "labels": {"a": "b"}, "bogus": 1},
        "spec": {
            "mode": "a",
            "extra": 1,
            "free": {"keep": 1},
            "tags": ["x"],
            "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "whatever": 2},
        },
        "status": {"x": 1},
    }
    before = copy.deepcopy(obj)
    assert unknown_fields(SMALL, obj) == ["metadata.bogus", "spec.extra", "status"]
    assert obj == before  # unknown_fields never mutates


def test_unknown_fields_in_a_real_cluster_role() -> None:
    obj = _cluster()
    obj["spec"]["roles"][0]["bogus"] = True
    obj["spec"]["colour"] = "red"
    assert unknown_fields(CLUSTER, obj) == ["spec.roles[0].bogus", "spec.colour"]
