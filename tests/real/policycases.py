"""The attacks on what gitops-kd owns, as kubectl commands, with the answer deploy/optional/admission-policy must give
(tests/real/test_admission_policy.py sends them to a real kube-apiserver and to cel-python)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

KDCLUSTER_LABEL, ROLE_LABEL = "kubedirector.hpe.com/kdcluster", "kubedirector.hpe.com/role"
GLASS, GLASS_GROUP = "gitops-kd.io/break-glass", "gitops-kd:break-glass"
APPLIED = "gitops-kd.io/applied-spec"
ATTACKER = "alice"
GITOPS_KD_SA = "system:serviceaccount:gitops-kd-system:gitops-kd"
KUBEDIRECTOR_SA = "system:serviceaccount:kubedirector:kubedirector"
WORKLOADS, SPECS = "gitops-kd-workloads", "gitops-kd-specs"  # the policies' names
KD = "kubedirector.hpe.com/v1beta1"


@dataclass(frozen=True)
class Attack:
    """One kubectl command (``-n <ns>`` is added) as ``user``/``groups`` on ``target`` (kubectl's kind/name), the
    request kind and operation the API server admits, and the policy that must deny it (None: allowed)."""

    name: str
    argv: tuple[str, ...]
    target: str
    kind: str
    operation: str = "UPDATE"
    denied_by: str | None = WORKLOADS
    user: str = ATTACKER
    groups: tuple[str, ...] = ()
    stdin: str | None = None


def _sts(name: str, labels: dict[str, str], owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if owner:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": meta,
        "spec": {
            "replicas": 0,
            "serviceName": "hello-dev",
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {"type": "OnDelete"},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "gitops-kd/hello:1.0.0"}]},
            },
        },
    }


def kdcluster() -> dict[str, Any]:
    """The KDCluster the workloads belong to (made first: the unlabelled StatefulSet's owner)."""
    quantity = {"cpu": "100m", "memory": "128Mi"}
    role = {"members": 1, "resources": {"requests": quantity, "limits": quantity}}
    return {
        "apiVersion": KD,
        "kind": "KubeDirectorCluster",
        "metadata": {"name": "hello-dev", "annotations": {APPLIED: "abc"}},
        "spec": {"app": "hello", "roles": [{"id": "controller", **role}, {"id": "worker", **role}]},
    }


def workloads(owner_uid: str) -> list[dict[str, Any]]:
    """What KubeDirector would have made for hello-dev, an unrelated StatefulSet, and the applied KDApp."""
    labels = {KDCLUSTER_LABEL: "hello-dev"}
    owner = {"apiVersion": KD, "kind": "KubeDirectorCluster", "name": "hello-dev", "uid": owner_uid, "controller": True}
    service: dict[str, Any] = {"apiVersion": "v1", "kind": "Service"}
    port = [{"name": "http", "port": 8080}]
    return [
        _sts("hello-dev-worker", {**labels, ROLE_LABEL: "worker"}),
        _sts("hello-dev-controller", {**labels, ROLE_LABEL: "controller"}),
        _sts("hello-dev-stripped", {}, owner),
        _sts("db", {"app": "db"}),
        {
            **service,
            "metadata": {"name": "hello-dev-worker-0", "labels": labels},
            "spec": {"selector": {"statefulset.kubernetes.io/pod-name": "hello-dev-worker-0"}, "ports": port},
        },
        {
            **service,
            "metadata": {"name": "hello-dev", "labels": labels},
            "spec": {"clusterIP": "None", "selector": {"kubedirector.hpe.com/headless": "hello-dev"}, "ports": port},
        },
    ]


W, STS, SVC = "statefulset/hello-dev-worker", "StatefulSet", "Service"
APPLY_IMAGE = json.dumps(
    {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "hello-dev-worker"},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "gitops-kd/hello:6.6.7"}]}}},
    }
)
SET_IMAGE = ("set", "image", W, "app=gitops-kd/hello:6.6.6")
ATTACKS = (
    Attack("kubectl set image of a role StatefulSet", SET_IMAGE, W, STS),
    Attack(
        "merge patch of the pod template",
        ("patch", W, "--type=merge", "-p", '{"spec":{"template":{"spec":{"terminationGracePeriodSeconds":5}}}}'),
        W,
        STS,
    ),
    Attack(
        "JSON patch of the updateStrategy",
        ("patch", W, "--type=json", "-p", '[{"op":"replace","path":"/spec/updateStrategy","value":{"type":"RollingUpdate"}}]'),
        W,
        STS,
    ),
    Attack(
        "server-side apply of the image (--force-conflicts)",
        ("apply", "--server-side", "--force-conflicts", "--field-manager=mallory", "-f", "-"),
        W,
        STS,
        stdin=APPLY_IMAGE,
    ),
    Attack("a server dry-run of set image", (*SET_IMAGE, "--dry-run=server"), W, STS),
    Attack("removing the kdcluster label", ("label", W, f"{KDCLUSTER_LABEL}-"), W, STS),
    Attack("changing the role label", ("label", "--overwrite", W, f"{ROLE_LABEL}=controller"), W, STS),
    Attack(
        "removing a member Service's kdcluster label",
        ("label", "service/hello-dev-worker-0", f"{KDCLUSTER_LABEL}-"),
        "service/hello-dev-worker-0",
        SVC,
    ),
    Attack(
        "changing a member Service's port",
        (
            "patch",
            "service/hello-dev-worker-0",
            "--type=json",
            "-p",
            '[{"op":"replace","path":"/spec/ports/0/port","value":9090}]',
        ),
        "service/hello-dev-worker-0",
        SVC,
    ),
    Attack("another label", ("label", W, "team=blue"), W, STS, denied_by=None),
    Attack(
        "minReadySeconds (outside the owned fields)", ("patch", W, "-p", '{"spec":{"minReadySeconds":5}}'), W, STS, denied_by=None
    ),
    Attack("deleting a role StatefulSet", ("delete", W, "--wait=false"), W, STS, "DELETE"),
    Attack("deleting it with --cascade=orphan", ("delete", W, "--cascade=orphan", "--wait=false"), W, STS, "DELETE"),
    Attack(
        "deleting a StatefulSet whose labels are gone (its ownerReference)",
        ("delete", "statefulset/hello-dev-stripped", "--wait=false"),
        "statefulset/hello-dev-stripped",
        STS,
        "DELETE",
    ),
    Attack(
        "deleting a member Service",
        ("delete", "service/hello-dev-worker-0", "--wait=false"),
        "service/hello-dev-worker-0",
        SVC,
        "DELETE",
    ),
    Attack(
        "deleting an unrelated StatefulSet", ("delete", "statefulset/db", "--wait=false"), "statefulset/db", STS, "DELETE", None
    ),
    Attack("gitops-kd's ServiceAccount sets the image", SET_IMAGE, W, STS, denied_by=None, user=GITOPS_KD_SA),
    Attack(
        "KubeDirector's ServiceAccount sets the image",
        ("set", "image", W, "app=gitops-kd/hello:6.6.5"),
        W,
        STS,
        denied_by=None,
        user=KUBEDIRECTOR_SA,
    ),
    Attack(
        "a member of the break-glass group sets the image",
        ("set", "image", W, "app=gitops-kd/hello:6.6.4"),
        W,
        STS,
        denied_by=None,
        groups=(GLASS_GROUP,),
    ),
    Attack(
        "a new break-glass annotation with a template change",
        (
            "patch",
            W,
            "--type=merge",
            "-p",
            json.dumps(
                {
                    "metadata": {"annotations": {GLASS: "INC-42"}},
                    "spec": {"template": {"spec": {"terminationGracePeriodSeconds": 7}}},
                }
            ),
        ),
        W,
        STS,
        denied_by=None,
    ),
    Attack("a second change under the same (stale) annotation", ("set", "image", W, "app=gitops-kd/hello:7"), W, STS),
    Attack(
        "editing an applied KDApp's spec",
        ("patch", "kubedirectorapp/hello", "--type=merge", "-p", '{"spec":{"version":"9.9.9"}}'),
        "kubedirectorapp/hello",
        "KubeDirectorApp",
        denied_by=SPECS,
    ),
    Attack(
        "labelling an applied KDApp",
        ("label", "kubedirectorapp/hello", "x=y"),
        "kubedirectorapp/hello",
        "KubeDirectorApp",
        denied_by=None,
    ),
    Attack(
        "deleting an applied KDApp",
        ("delete", "kubedirectorapp/hello", "--wait=false"),
        "kubedirectorapp/hello",
        "KubeDirectorApp",
        "DELETE",
        SPECS,
    ),
    Attack(
        "deleting an applied KDCluster",
        ("delete", "kubedirectorcluster/hello-dev", "--wait=false"),
        "kubedirectorcluster/hello-dev",
        "KubeDirectorCluster",
        "DELETE",
        SPECS,
    ),
    Attack(
        "deleting the cluster's headless Service (not a member)",
        ("delete", "service/hello-dev", "--wait=false"),
        "service/hello-dev",
        SVC,
        "DELETE",
        None,
    ),
    Attack(
        "a member of the break-glass group deletes a role StatefulSet",
        ("delete", "statefulset/hello-dev-controller", "--wait=false"),
        "statefulset/hello-dev-controller",
        STS,
        "DELETE",
        None,
        groups=(GLASS_GROUP,),
    ),
)
