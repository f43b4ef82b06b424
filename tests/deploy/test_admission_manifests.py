"""deploy/optional/admission (webhook) and deploy/optional/admission-policy (CEL, Kubernetes 1.30+): both render
and apply (real kubectl) to the embedded cluster; the webhook is wired to its Service and port; the CEL rules,
which the embedded cluster does not run, are evaluated here (cel-python) on AdmissionReview-shaped requests."""

from __future__ import annotations

import copy
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml

from kdsim.cluster import EmbeddedCluster
from tests.kdcluster import embedded_cluster

ROOT = Path(__file__).resolve().parents[2]
SA = "system:serviceaccount:gitops-kd-system:gitops-kd"


def _overlay(tmp: Path, component: str) -> Path:
    path = tmp / component
    path.mkdir(parents=True)
    rel = os.path.relpath(ROOT / "deploy", path)
    (path / "kustomization.yaml").write_text(f"resources: [{rel}]\ncomponents: [{rel}/optional/{component}]\n")
    return path


def _render(path: Path) -> list[dict[str, Any]]:
    out = subprocess.run(["kubectl", "kustomize", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with embedded_cluster(tmp_path_factory.mktemp("admission-deploy"), controllers=False) as c:
        yield c


@pytest.mark.parametrize("component", ["admission", "admission-policy"])
def test_the_component_renders_and_applies(component: str, tmp_path: Path, cluster: EmbeddedCluster) -> None:
    path = _overlay(tmp_path, component)
    docs = _render(path)
    applied = subprocess.run(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "apply", "-k", str(path)], capture_output=True, text=True, timeout=60
    )
    assert applied.returncode == 0, applied.stderr
    kinds = {d["kind"] for d in docs}
    if component == "admission":
        assert {"ValidatingWebhookConfiguration", "Service"} <= kinds and "ValidatingAdmissionPolicy" not in kinds
        listed = subprocess.run(
            [
                "kubectl",
                "--kubeconfig",
                str(cluster.kubeconfig),
                "get",
                "validatingwebhookconfiguration",
                "gitops-kd",
                "-o",
                "yaml",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0 and "workloads.admission.gitops-kd.io" in listed.stdout
    else:
        assert {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} <= kinds
        assert "ValidatingWebhookConfiguration" not in kinds
        bindings = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"]
        policies = {d["metadata"]["name"] for d in docs if d["kind"] == "ValidatingAdmissionPolicy"}
        assert {b["spec"]["policyName"] for b in bindings} == policies
        assert all(b["spec"]["validationActions"] == ["Deny"] for b in bindings)


def test_the_webhook_calls_the_controller_through_its_service(tmp_path: Path) -> None:
    docs = _render(_overlay(tmp_path, "admission"))
    [vwc] = [d for d in docs if d["kind"] == "ValidatingWebhookConfiguration"]
    [svc] = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "gitops-kd-admission"]
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert "--admission-listen=0.0.0.0:9443" in container["args"] and ports["admission"] == 9443
    assert svc["spec"]["ports"] == [{"name": "admission", "port": 443, "targetPort": "admission", "protocol": "TCP"}]
    assert svc["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    for hook in vwc["webhooks"]:
        assert hook["clientConfig"]["service"] == {
            "namespace": "gitops-kd-system",
            "name": "gitops-kd-admission",
            "port": 443,
            "path": "/admission",
        }
        assert (hook["failurePolicy"], hook["sideEffects"], hook["admissionReviewVersions"]) == ("Ignore", "None", ["v1"])
        assert hook["namespaceSelector"]["matchExpressions"]
    [workloads, specs] = vwc["webhooks"]
    assert workloads["objectSelector"] == {"matchExpressions": [{"key": "kubedirector.hpe.com/kdcluster", "operator": "Exists"}]}
    assert {r["resources"][0] for r in workloads["rules"]} == {"statefulsets", "services"}
    assert specs["rules"][0]["operations"] == ["UPDATE", "DELETE"]


# -- the CEL variant, evaluated ------------------------------------------------------------------------------------
def _policies(tmp: Path) -> dict[str, dict[str, Any]]:
    return {
        d["metadata"]["name"]: d["spec"]
        for d in _render(_overlay(tmp, "admission-policy"))
        if d["kind"] == "ValidatingAdmissionPolicy"
    }


RESOURCES = {
    "StatefulSet": "statefulsets",
    "Service": "services",
    "KubeDirectorApp": "kubedirectorapps",
    "KubeDirectorCluster": "kubedirectorclusters",
}


def _matched(policy: dict[str, Any], request: dict[str, Any], obj: Any, old: Any) -> bool:
    """matchConstraints as the API server applies them: a resourceRule naming the resource and the operation, and
    the objectSelector's Exists expressions on the object or the old object (either matching is enough)."""
    constraints = policy["matchConstraints"]
    if not any(
        RESOURCES[request["kind"]["kind"]] in r["resources"] and request["operation"] in r["operations"]
        for r in constraints["resourceRules"]
    ):
        return False
    wanted = [
        e["key"] for e in (constraints.get("objectSelector") or {}).get("matchExpressions") or [] if e["operator"] == "Exists"
    ]
    return not wanted or any(all(k in ((o or {}).get("metadata") or {}).get("labels", {}) for k in wanted) for o in (obj, old))


def _verdict(policy: dict[str, Any], request: dict[str, Any], obj: Any, old: Any) -> str:
    """ "skipped" (not matched, or a matchCondition is false), "allowed", or the denial message, as the API server
    decides."""
    if not _matched(policy, request, obj, old):
        return "skipped"
    env = celpy.Environment()
    activation = celpy.json_to_cel({"request": request, "object": obj, "oldObject": old})

    def run(expr: str) -> Any:
        return env.program(env.compile(expr)).evaluate(activation)

    if not all(run(c["expression"]) for c in policy.get("matchConditions") or []):
        return "skipped"
    for v in policy["validations"]:
        if not run(v["expression"]):
            return str(run(v["messageExpression"]))
    return "allowed"


def _request(kind: str, operation: str = "UPDATE", user: str = "alice", groups: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "operation": operation,
        "kind": {"kind": kind},
        "userInfo": {"username": user, "groups": [*groups, "system:authenticated"]},
    }


STS = {
    "metadata": {
        "name": "hello-dev-worker",
        "namespace": "default",
        "labels": {"kubedirector.hpe.com/kdcluster": "hello-dev", "kubedirector.hpe.com/role": "worker"},
    },
    "spec": {
        "replicas": 2,
        "updateStrategy": {"type": "OnDelete"},
        "template": {"spec": {"containers": [{"name": "app", "image": "gitops-kd/hello:1.0.0"}]}},
    },
}


def test_the_policy_denies_owned_statefulset_and_service_edits_but_not_its_users_or_break_glass(tmp_path: Path) -> None:
    policy = _policies(tmp_path)["gitops-kd-workloads"]
    edited = copy.deepcopy(STS)
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = "gitops-kd/hello:6.6.6"
    denial = _verdict(policy, _request("StatefulSet"), edited, STS)
    assert denial.startswith(
        "StatefulSet default/hello-dev-worker is managed by gitops-kd from Git: "
        "spec.template.spec and spec.updateStrategy are owned by gitops-kd"
    )
    scaled = copy.deepcopy(STS)
    scaled["spec"]["replicas"] = 3
    scaled["metadata"]["labels"] = {**STS["metadata"]["labels"], "team": "blue"}
    assert _verdict(policy, _request("StatefulSet"), scaled, STS) == "allowed"
    assert _verdict(policy, _request("StatefulSet", user=SA), edited, STS) == "skipped"
    assert _verdict(policy, _request("StatefulSet", groups=("gitops-kd:break-glass",)), edited, STS) == "skipped"
    glass = copy.deepcopy(edited)
    glass["metadata"]["annotations"] = {"gitops-kd.io/break-glass": "INC-42"}
    assert _verdict(policy, _request("StatefulSet"), glass, STS) == "skipped"
    again = copy.deepcopy(glass)
    again["spec"]["template"]["spec"]["containers"][0]["image"] = "gitops-kd/hello:7"
    assert _verdict(policy, _request("StatefulSet"), again, glass).startswith("StatefulSet")  # a stale reason
    svc = {
        "metadata": {"name": "s", "namespace": "default", "labels": {"kubedirector.hpe.com/kdcluster": "hello-dev"}},
        "spec": {"ports": [{"name": "http", "port": 8080}]},
    }
    moved = {"metadata": svc["metadata"], "spec": {"ports": [{"name": "http", "port": 9090}]}}
    assert "spec.ports are owned by gitops-kd" in _verdict(policy, _request("Service"), moved, svc)


def test_the_policy_denies_deleting_or_editing_an_applied_kdapp(tmp_path: Path) -> None:
    policy = _policies(tmp_path)["gitops-kd-specs"]
    app = {
        "metadata": {"name": "hello", "namespace": "default", "annotations": {"gitops-kd.io/applied-spec": "abc"}},
        "spec": {"version": "1.0.0"},
    }
    assert (
        _verdict(policy, _request("KubeDirectorApp", "DELETE"), None, app)
        == "KubeDirectorApp default/hello is applied by gitops-kd from Git: deleting it is owned by gitops-kd; "
        "change it in Git instead"
    )
    bumped = {**app, "spec": {"version": "9.9.9"}}
    assert "its spec is owned" in _verdict(policy, _request("KubeDirectorApp"), bumped, app)
    labelled = {**app, "metadata": {**app["metadata"], "labels": {"x": "y"}}}
    assert _verdict(policy, _request("KubeDirectorApp"), labelled, app) == "allowed"
    hand_made = {"metadata": {"name": "mine", "namespace": "default"}, "spec": {}}
    assert _verdict(policy, _request("KubeDirectorApp", "DELETE"), None, hand_made) == "skipped"
    assert _verdict(policy, _request("KubeDirectorApp", "DELETE", user=SA), None, app) == "skipped"


def test_the_policy_denies_deleting_a_role_statefulset_or_member_service_but_not_to_the_break_glass_group(tmp_path: Path) -> None:
    """Invariant (issue 28, 8, CEL variant): DELETE of what gitops-kd owns through KubeDirector (a role
    StatefulSet, a member Service: one selecting a single pod) is denied to others, also once its labels were
    removed (found by its controller ownerReference to the KDCluster); the break-glass group and gitops-kd's users
    pass; the cluster's headless Service and an unrelated StatefulSet are not judged as members."""
    policy = _policies(tmp_path)["gitops-kd-workloads"]
    labelled = STS
    denial = _verdict(policy, _request("StatefulSet", "DELETE"), None, labelled)
    assert denial.startswith(
        "StatefulSet default/hello-dev-worker is managed by gitops-kd from Git: deleting it is owned by gitops-kd"
    ), denial
    assert "gitops-kd:break-glass" in denial
    unlabelled = copy.deepcopy(STS)
    unlabelled["metadata"]["labels"] = {}
    unlabelled["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "kubedirector.hpe.com/v1beta1",
            "controller": True,
            "kind": "KubeDirectorCluster",
            "name": "hello-dev",
            "uid": "u",
        }
    ]
    assert "deleting it is owned" in _verdict(policy, _request("StatefulSet", "DELETE"), None, unlabelled)
    assert _verdict(policy, _request("StatefulSet", "DELETE", groups=("gitops-kd:break-glass",)), None, labelled) == "skipped"
    assert _verdict(policy, _request("StatefulSet", "DELETE", user=SA), None, labelled) == "skipped"
    theirs = {**STS, "metadata": {"name": "db", "namespace": "default", "labels": {"app": "db"}}}
    assert _verdict(policy, _request("StatefulSet", "DELETE"), None, theirs) == "skipped"  # not KubeDirector's
    member = {
        "metadata": {
            "name": "hello-dev-worker-0",
            "namespace": "default",
            "labels": {"kubedirector.hpe.com/kdcluster": "hello-dev"},
        },
        "spec": {
            "selector": {"statefulset.kubernetes.io/pod-name": "hello-dev-worker-0"},
            "ports": [{"name": "http", "port": 8080}],
        },
    }
    assert "Service default/hello-dev-worker-0 is managed by gitops-kd from Git: deleting it is owned" in _verdict(
        policy, _request("Service", "DELETE"), None, member
    )
    headless = {"metadata": member["metadata"], "spec": {"selector": {"kubedirector.hpe.com/headless": "hello-dev"}}}
    assert _verdict(policy, _request("Service", "DELETE"), None, headless) == "allowed"
    assert _verdict(policy, _request("StatefulSet"), labelled, labelled) == "allowed"  # an UPDATE changing nothing


def test_the_policy_denies_removing_or_changing_kubedirector_labels(tmp_path: Path) -> None:
    """Invariant (issue 28, 4, CEL variant): KubeDirector's kdcluster and role labels on a StatefulSet or Service it
    made are owned: removing or changing one is denied to others (so the object cannot be taken out of what the
    webhook's objectSelector and gitops-kd's observation match), a break-glass annotation edit or group passes,
    and other labels stay free."""
    policy = _policies(tmp_path)["gitops-kd-workloads"]
    labelled = STS
    stripped = copy.deepcopy(labelled)
    del stripped["metadata"]["labels"]["kubedirector.hpe.com/kdcluster"]
    denial = _verdict(policy, _request("StatefulSet"), stripped, labelled)
    assert (
        "metadata.labels[kubedirector.hpe.com/kdcluster] and metadata.labels[kubedirector.hpe.com/role] are "
        "owned by gitops-kd" in denial
    ), denial
    moved = copy.deepcopy(labelled)
    moved["metadata"]["labels"]["kubedirector.hpe.com/role"] = "controller"
    assert "are owned by gitops-kd" in _verdict(policy, _request("StatefulSet"), moved, labelled)
    bare = copy.deepcopy(labelled)
    bare["metadata"].pop("labels")
    svc = {
        "metadata": {"name": "s", "namespace": "default", "labels": {"kubedirector.hpe.com/kdcluster": "hello-dev"}},
        "spec": {"ports": [{"name": "http", "port": 8080}]},
    }
    assert "are owned by gitops-kd" in _verdict(
        policy, _request("Service"), {**svc, "metadata": {"name": "s", "namespace": "default"}}, svc
    )
    assert "are owned by gitops-kd" in _verdict(policy, _request("StatefulSet"), bare, labelled)
    other = copy.deepcopy(labelled)
    other["metadata"]["labels"]["team"] = "blue"
    assert _verdict(policy, _request("StatefulSet"), other, labelled) == "allowed"
    glass = copy.deepcopy(stripped)
    glass["metadata"]["annotations"] = {"gitops-kd.io/break-glass": "INC-43"}
    assert _verdict(policy, _request("StatefulSet"), glass, labelled) == "skipped"
    assert _verdict(policy, _request("StatefulSet", groups=("gitops-kd:break-glass",)), stripped, labelled) == "skipped"
