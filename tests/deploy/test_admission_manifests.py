"""deploy/optional/admission (webhook) and deploy/optional/admission-policy (CEL, Kubernetes 1.30+): both render
and apply (real kubectl) to the embedded cluster; the webhook is wired to its Service and port; the CEL rules,
which the embedded cluster does not run, are evaluated here (cel-python) on AdmissionReview-shaped requests."""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kdsim.cluster import EmbeddedCluster
from tests.celpolicy import overlay, policies, render, request_for, verdict
from tests.kdcluster import embedded_cluster

SA = "system:serviceaccount:gitops-kd-system:gitops-kd"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with embedded_cluster(tmp_path_factory.mktemp("admission-deploy"), controllers=False) as c:
        yield c


@pytest.mark.parametrize("component", ["admission", "admission-policy"])
def test_the_component_renders_and_applies(component: str, tmp_path: Path, cluster: EmbeddedCluster) -> None:
    path = overlay(tmp_path, component)
    docs = render(path)
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
    docs = render(overlay(tmp_path, "admission"))
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


# -- the CEL variant, evaluated (tests/celpolicy.py) ------------------------------------------------------------
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
    policy = policies(tmp_path)["gitops-kd-workloads"]
    edited = copy.deepcopy(STS)
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = "gitops-kd/hello:6.6.6"
    denial = verdict(policy, request_for("StatefulSet"), edited, STS)
    assert denial.startswith(
        "StatefulSet default/hello-dev-worker is managed by gitops-kd from Git: "
        "spec.template.spec and spec.updateStrategy are owned by gitops-kd"
    )
    scaled = copy.deepcopy(STS)
    scaled["spec"]["replicas"] = 3
    scaled["metadata"]["labels"] = {**STS["metadata"]["labels"], "team": "blue"}
    assert verdict(policy, request_for("StatefulSet"), scaled, STS) == "allowed"
    assert verdict(policy, request_for("StatefulSet", user=SA), edited, STS) == "skipped"
    assert verdict(policy, request_for("StatefulSet", groups=("gitops-kd:break-glass",)), edited, STS) == "skipped"
    glass = copy.deepcopy(edited)
    glass["metadata"]["annotations"] = {"gitops-kd.io/break-glass": "INC-42"}
    assert verdict(policy, request_for("StatefulSet"), glass, STS) == "skipped"
    again = copy.deepcopy(glass)
    again["spec"]["template"]["spec"]["containers"][0]["image"] = "gitops-kd/hello:7"
    assert verdict(policy, request_for("StatefulSet"), again, glass).startswith("StatefulSet")  # a stale reason
    svc = {
        "metadata": {"name": "s", "namespace": "default", "labels": {"kubedirector.hpe.com/kdcluster": "hello-dev"}},
        "spec": {"ports": [{"name": "http", "port": 8080}]},
    }
    moved = {"metadata": svc["metadata"], "spec": {"ports": [{"name": "http", "port": 9090}]}}
    assert "spec.ports are owned by gitops-kd" in verdict(policy, request_for("Service"), moved, svc)


def test_the_policy_denies_deleting_or_editing_an_applied_kdapp(tmp_path: Path) -> None:
    policy = policies(tmp_path)["gitops-kd-specs"]
    app = {
        "metadata": {"name": "hello", "namespace": "default", "annotations": {"gitops-kd.io/applied-spec": "abc"}},
        "spec": {"version": "1.0.0"},
    }
    assert (
        verdict(policy, request_for("KubeDirectorApp", "DELETE"), None, app)
        == "KubeDirectorApp default/hello is applied by gitops-kd from Git: deleting it is owned by gitops-kd; "
        "change it in Git instead"
    )
    bumped = {**app, "spec": {"version": "9.9.9"}}
    assert "its spec is owned" in verdict(policy, request_for("KubeDirectorApp"), bumped, app)
    labelled = {**app, "metadata": {**app["metadata"], "labels": {"x": "y"}}}
    assert verdict(policy, request_for("KubeDirectorApp"), labelled, app) == "allowed"
    hand_made = {"metadata": {"name": "mine", "namespace": "default"}, "spec": {}}
    assert verdict(policy, request_for("KubeDirectorApp", "DELETE"), None, hand_made) == "skipped"
    assert verdict(policy, request_for("KubeDirectorApp", "DELETE", user=SA), None, app) == "skipped"


def test_the_policy_denies_deleting_a_role_statefulset_or_member_service_but_not_to_the_break_glass_group(tmp_path: Path) -> None:
    """Invariant (issue 28, 8, CEL variant): DELETE of what gitops-kd owns through KubeDirector (a role
    StatefulSet, a member Service: one selecting a single pod) is denied to others, also once its labels were
    removed (found by its controller ownerReference to the KDCluster); the break-glass group and gitops-kd's users
    pass; the cluster's headless Service and an unrelated StatefulSet are not judged as members."""
    policy = policies(tmp_path)["gitops-kd-workloads"]
    labelled = STS
    denial = verdict(policy, request_for("StatefulSet", "DELETE"), None, labelled)
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
    assert "deleting it is owned" in verdict(policy, request_for("StatefulSet", "DELETE"), None, unlabelled)
    assert verdict(policy, request_for("StatefulSet", "DELETE", groups=("gitops-kd:break-glass",)), None, labelled) == "skipped"
    assert verdict(policy, request_for("StatefulSet", "DELETE", user=SA), None, labelled) == "skipped"
    theirs = {**STS, "metadata": {"name": "db", "namespace": "default", "labels": {"app": "db"}}}
    assert verdict(policy, request_for("StatefulSet", "DELETE"), None, theirs) == "skipped"  # not KubeDirector's
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
    assert "Service default/hello-dev-worker-0 is managed by gitops-kd from Git: deleting it is owned" in verdict(
        policy, request_for("Service", "DELETE"), None, member
    )
    headless = {"metadata": member["metadata"], "spec": {"selector": {"kubedirector.hpe.com/headless": "hello-dev"}}}
    assert verdict(policy, request_for("Service", "DELETE"), None, headless) == "allowed"
    assert verdict(policy, request_for("StatefulSet"), labelled, labelled) == "allowed"  # an UPDATE changing nothing


def test_the_policy_denies_removing_or_changing_kubedirector_labels(tmp_path: Path) -> None:
    """Invariant (issue 28, 4, CEL variant): KubeDirector's kdcluster and role labels on a StatefulSet or Service it
    made are owned: removing or changing one is denied to others (so the object cannot be taken out of what the
    webhook's objectSelector and gitops-kd's observation match), a break-glass annotation edit or group passes,
    and other labels stay free."""
    policy = policies(tmp_path)["gitops-kd-workloads"]
    labelled = STS
    stripped = copy.deepcopy(labelled)
    del stripped["metadata"]["labels"]["kubedirector.hpe.com/kdcluster"]
    denial = verdict(policy, request_for("StatefulSet"), stripped, labelled)
    assert (
        "metadata.labels[kubedirector.hpe.com/kdcluster] and metadata.labels[kubedirector.hpe.com/role] are "
        "owned by gitops-kd" in denial
    ), denial
    moved = copy.deepcopy(labelled)
    moved["metadata"]["labels"]["kubedirector.hpe.com/role"] = "controller"
    assert "are owned by gitops-kd" in verdict(policy, request_for("StatefulSet"), moved, labelled)
    bare = copy.deepcopy(labelled)
    bare["metadata"].pop("labels")
    svc = {
        "metadata": {"name": "s", "namespace": "default", "labels": {"kubedirector.hpe.com/kdcluster": "hello-dev"}},
        "spec": {"ports": [{"name": "http", "port": 8080}]},
    }
    assert "are owned by gitops-kd" in verdict(
        policy, request_for("Service"), {**svc, "metadata": {"name": "s", "namespace": "default"}}, svc
    )
    assert "are owned by gitops-kd" in verdict(policy, request_for("StatefulSet"), bare, labelled)
    other = copy.deepcopy(labelled)
    other["metadata"]["labels"]["team"] = "blue"
    assert verdict(policy, request_for("StatefulSet"), other, labelled) == "allowed"
    glass = copy.deepcopy(stripped)
    glass["metadata"]["annotations"] = {"gitops-kd.io/break-glass": "INC-43"}
    assert verdict(policy, request_for("StatefulSet"), glass, labelled) == "skipped"
    assert verdict(policy, request_for("StatefulSet", groups=("gitops-kd:break-glass",)), stripped, labelled) == "skipped"
