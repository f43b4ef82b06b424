"""Label and field selectors: parsing, apiserver error wording and matching on KubeDirector-shaped objects."""

from __future__ import annotations

from typing import Any

import pytest

from kdsim.errors import ApiError
from kdsim.selectors import (
    label_selector_from_dict,
    parse_field_selector,
    parse_label_selector,
    selector_to_string,
)

POD_LABELS = {
    "kubedirector.hpe.com/kdcluster": "spark",
    "kubedirector.hpe.com/kdapp": "spark245",
    "kubedirector.hpe.com/role": "spark-master",
    "kubedirector.hpe.com/headless": "spark",
    "statefulset.kubernetes.io/pod-name": "kdss-abc-0",
    "tier": "3",
}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", True),
        ("kubedirector.hpe.com/kdcluster=spark", True),
        ("kubedirector.hpe.com/kdcluster==spark", True),
        ("kubedirector.hpe.com/kdcluster!=spark", False),
        ("kubedirector.hpe.com/role in (spark-master, spark-worker)", True),
        ("kubedirector.hpe.com/role notin (spark-master)", False),
        ("kubedirector.hpe.com/role notin (livy)", True),
        ("kubedirector.hpe.com/kdapp", True),
        ("!kubedirector.hpe.com/kdapp", False),
        ("!missing", True),
        ("missing!=x", True),  # != matches when the key is absent
        ("missing in (x)", False),
        ("kubedirector.hpe.com/kdcluster=spark,kubedirector.hpe.com/role=spark-worker", False),
        ("tier>2", True),
        ("tier<3", False),
        ("  kubedirector.hpe.com/kdcluster = spark ,  tier  ", True),
    ],
)
def test_label_selector_matching(text: str, expected: bool) -> None:
    assert parse_label_selector(text).matches(POD_LABELS) is expected


QUALIFIED = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    "text, message",
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a=b,", "found '', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        (
            "a>x",
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, "
            "the value must be an integer",
        ),
        (
            "a=$$",
            'unable to parse requirement: values[0][a]: Invalid value: "$$": a valid label must be an empty '
            "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        ("-a=b", 'unable to parse requirement: key: Invalid value: "-a": name part ' + QUALIFIED),
    ],
)
def test_label_selector_errors_are_400_with_apimachinery_wording(text: str, message: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_label_selector(text)
    assert info.value.code == 400 and info.value.reason == "BadRequest"
    assert info.value.message == message


def test_label_selector_from_dict_like_a_statefulset() -> None:
    sel = label_selector_from_dict(
        {
            "matchLabels": {"kubedirector.hpe.com/kdcluster": "spark", "kubedirector.hpe.com/role": "spark-master"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["3", "4"]},
                {"key": "gone", "operator": "DoesNotExist"},
                {"key": "kubedirector.hpe.com/kdapp", "operator": "Exists"},
                {"key": "kubedirector.hpe.com/headless", "operator": "NotIn", "values": ["x"]},
            ],
        }
    )
    assert sel.matches(POD_LABELS)
    assert not sel.matches({**POD_LABELS, "gone": ""})
    assert not sel.matches({})
    assert label_selector_from_dict({}).matches({})  # empty selector: everything
    assert not label_selector_from_dict(None).matches(POD_LABELS)  # nil selector: nothing
    assert selector_to_string(sel) == (
        "!gone,kubedirector.hpe.com/headless notin (x),kubedirector.hpe.com/kdapp,"
        "kubedirector.hpe.com/kdcluster=spark,kubedirector.hpe.com/role=spark-master,"
        "tier in (3,4)"
    )


def test_label_selector_from_dict_rejects_bad_operator() -> None:
    with pytest.raises(ApiError) as info:
        label_selector_from_dict({"matchExpressions": [{"key": "a", "operator": "Like", "values": ["x"]}]})
    assert info.value.code == 400
    assert info.value.message == '"Like" is not a valid label selector operator'


POD: dict[str, Any] = {
    "metadata": {"name": "kdss-abc-0", "namespace": "default"},
    "spec": {"nodeName": "node-1", "restartPolicy": "Always"},
    "status": {"phase": "Running", "podIP": "10.0.0.5"},
}
EVENT: dict[str, Any] = {
    "metadata": {"name": "e1", "namespace": "default"},
    "involvedObject": {"kind": "Pod", "name": "kdss-abc-0", "namespace": "default", "uid": "u-1"},
    "reason": "Started",
    "type": "Normal",
    "source": {"component": "kubelet"},
}


@pytest.mark.parametrize(
    "kind, obj, text, expected",
    [
        ("Pod", POD, "metadata.name=kdss-abc-0", True),
        ("Pod", POD, "metadata.name==kdss-abc-0,metadata.namespace=default", True),
        ("Pod", POD, "status.phase!=Running", False),
        ("Pod", POD, "spec.nodeName=node-1,status.podIP=10.0.0.5", True),
        ("Pod", POD, "spec.hostNetwork=false", True),
        ("Pod", POD, "status.nominatedNodeName=", True),
        ("Event", EVENT, "involvedObject.kind=Pod,involvedObject.name=kdss-abc-0", True),
        ("Event", EVENT, "involvedObject.uid=u-2", False),
        ("Event", EVENT, "source=kubelet,reason=Started,type=Normal", True),
        ("Secret", {"metadata": {"name": "s"}, "type": "Opaque"}, "type=Opaque", True),
        ("StatefulSet", {"metadata": {"name": "a,b"}}, "metadata.name=a\\,b", True),
        ("KubeDirectorCluster", {"metadata": {"name": "spark"}}, "", True),
    ],
)
def test_field_selector_matching(kind: str, obj: dict[str, Any], text: str, expected: bool) -> None:
    assert parse_field_selector(text, kind).matches(obj) is expected


@pytest.mark.parametrize(
    "kind, text, message",
    [
        ("Pod", "spec.foo=1", "field label not supported: spec.foo"),
        ("StatefulSet", "status.phase=Running", "field label not supported: status.phase"),
        ("ConfigMap", "type=Opaque", "field label not supported: type"),
        ("Pod", "metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
    ],
)
def test_field_selector_errors(kind: str, text: str, message: str) -> None:
    with pytest.raises(ApiError) as info:
        parse_field_selector(text, kind)
    assert info.value.code == 400 and info.value.message == message
