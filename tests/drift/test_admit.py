"""decide(): the admission rule on AdmissionReview requests built from a steady observed cluster (pure)."""

from __future__ import annotations

import copy
from typing import Any

from gitops_kd.diff.engine import app_manifest, cluster_manifest
from gitops_kd.drift import IgnoreRules
from gitops_kd.drift.admit import Identities, decide
from gitops_kd.kd import layout
from gitops_kd.spec.freeze import thaw

from .worlds import HELLO1, HELLO_DEV, NS, app_container, cluster, desired, steady

D = desired(HELLO1, HELLO_DEV, commit="abc123")
STATE = steady()
WHO = Identities(
    controller=frozenset({"system:serviceaccount:gitops-kd-system:gitops-kd"}),
    kubedirector=frozenset({"system:serviceaccount:kubedirector:kubedirector"}),
    break_glass_groups=frozenset({"oncall"}),
)


def _sts() -> dict[str, Any]:
    """The worker StatefulSet as the API server would show it (the kdworld objects carry no raw)."""
    sts = cluster(STATE).statefulset("worker")
    assert sts is not None
    return {
        "metadata": {
            "name": sts.name,
            "namespace": sts.namespace,
            "labels": {layout.CLUSTER_LABEL: HELLO_DEV.name, layout.ROLE_LABEL: "worker"},
        },
        "spec": {"replicas": sts.replicas, "updateStrategy": {"type": sts.update_strategy}, "template": thaw(sts.template)},
    }


def _service() -> dict[str, Any]:
    svc = cluster(STATE).member_services()[0]
    return {
        "metadata": {
            "name": svc.name,
            "namespace": svc.namespace,
            "labels": {layout.CLUSTER_LABEL: HELLO_DEV.name, layout.ROLE_LABEL: svc.role},
        },
        "spec": {"ports": [dict(p) for p in svc.ports]},
    }


def _request(
    kind: str,
    old: dict[str, Any],
    new: dict[str, Any] | None,
    *,
    operation: str = "UPDATE",
    user: str = "alice",
    groups: tuple[str, ...] = (),
) -> dict[str, Any]:
    meta = old["metadata"]
    return {
        "uid": "u",
        "kind": {"kind": kind},
        "operation": operation,
        "name": meta["name"],
        "namespace": meta.get("namespace", NS),
        "userInfo": {"username": user, "groups": list(groups)},
        "object": new,
        "oldObject": old,
    }


def _image(sts: dict[str, Any], image: str) -> dict[str, Any]:
    edited = copy.deepcopy(sts)
    app_container(edited["spec"]["template"])["image"] = image
    return edited


def test_an_owned_template_field_changed_away_from_git_is_denied_naming_object_field_files_and_break_glass() -> None:
    old = _sts()
    verdict = decide(_request("StatefulSet", old, _image(old, "evil:9")), D, STATE, WHO)
    assert not verdict.allowed
    assert verdict.fields == ("spec.template.spec.containers[app].image",)
    assert verdict.message.startswith(
        f"StatefulSet {NS}/{old['metadata']['name']} is managed by gitops-kd from Git: "
        "spec.template.spec.containers[app].image is owned by gitops-kd; change "
    )
    assert HELLO1.source in verdict.message and HELLO_DEV.source in verdict.message
    assert 'gitops-kd.io/break-glass="<reason>"' in verdict.message and "group oncall" in verdict.message


def test_unowned_fields_and_putting_git_back_pass() -> None:
    old = _sts()
    scaled = copy.deepcopy(old)
    scaled["spec"]["replicas"] = 7
    scaled["metadata"].setdefault("labels", {})["team"] = "blue"
    assert decide(_request("StatefulSet", old, scaled), D, STATE, WHO).allowed
    drifted = _image(old, "evil:9")
    assert decide(_request("StatefulSet", drifted, old), D, STATE, WHO).allowed  # back to Git's value


def test_updatestrategy_and_service_ports_are_owned() -> None:
    old = _sts()
    rolling = copy.deepcopy(old)
    rolling["spec"]["updateStrategy"] = {"type": "RollingUpdate"}
    assert decide(_request("StatefulSet", old, rolling), D, STATE, WHO).fields == ("spec.updateStrategy.type",)
    svc = _service()
    moved = copy.deepcopy(svc)
    moved["spec"]["ports"][0]["port"] = 9999
    assert decide(_request("Service", svc, moved), D, STATE, WHO).fields == ("spec.ports",)


def test_gitops_kd_kubedirector_and_break_glass_pass_break_glass_is_reported() -> None:
    old = _sts()
    new = _image(old, "evil:9")
    for user in (*WHO.controller, *WHO.kubedirector):
        verdict = decide(_request("StatefulSet", old, new, user=user), D, STATE, WHO)
        assert verdict.allowed and not verdict.break_glass
    by_group = decide(_request("StatefulSet", old, new, groups=("oncall",)), D, STATE, WHO)
    assert by_group.allowed and by_group.break_glass == "group oncall"
    annotated = copy.deepcopy(new)
    annotated["metadata"].setdefault("annotations", {})["gitops-kd.io/break-glass"] = "INC-1"
    by_note = decide(_request("StatefulSet", old, annotated), D, STATE, WHO)
    assert by_note.allowed and by_note.break_glass == "annotation 'INC-1'"
    stale = _image(annotated, "evil:10")  # the same reason again is no new break-glass
    assert not decide(_request("StatefulSet", annotated, stale), D, STATE, WHO).allowed


def test_kdapp_and_kdcluster_from_git_cannot_be_deleted_or_respecced_and_ignore_rules_apply() -> None:
    app = app_manifest(HELLO1, (NS, "hello"))
    assert not decide(_request("KubeDirectorApp", app, None, operation="DELETE"), D, STATE, WHO).allowed
    bumped = copy.deepcopy(app)
    bumped["spec"]["version"] = "9.9.9"
    assert decide(_request("KubeDirectorApp", app, bumped), D, STATE, WHO).fields == ("spec.version",)
    kd_note = copy.deepcopy(app)
    kd_note["metadata"].setdefault("annotations", {})["kubedirector.hpe.com/x"] = "y"
    assert decide(_request("KubeDirectorApp", app, kd_note), D, STATE, WHO).allowed
    rules = IgnoreRules.from_dict({"ignore": {"KubeDirectorApp": ["spec.version"]}})
    assert decide(_request("KubeDirectorApp", app, bumped), D, STATE, WHO, rules).allowed
    live = cluster_manifest(HELLO_DEV, (NS, "hello-dev"))
    assert not decide(_request("KubeDirectorCluster", live, None, operation="DELETE"), D, STATE, WHO).allowed
    other = copy.deepcopy(live)
    other["metadata"]["name"] = "not-in-git"
    assert decide(_request("KubeDirectorCluster", other, None, operation="DELETE"), D, STATE, WHO).allowed


def test_no_desired_state_creates_and_subresources_pass() -> None:
    old = _sts()
    new = _image(old, "evil:9")
    assert decide(_request("StatefulSet", old, new), None, STATE, WHO).allowed
    assert decide({**_request("StatefulSet", old, new), "subResource": "status"}, D, STATE, WHO).allowed
    assert decide({**_request("StatefulSet", old, new), "operation": "CREATE"}, D, STATE, WHO).allowed
