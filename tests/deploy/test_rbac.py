"""Least privilege, checked both ways: the (verb, group, resource) requests a real `gitops-kd run` makes
during an upgrade, a drift revert, leader election, a push to its standby, a read of every web UI route and
`gitops-kd status` are exactly what deploy/rbac.yaml grants, and what the Helm chart (charts/gitops-kd) grants."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.kube.leader import replica_of
from gitops_kd.kube.shardleases import holders as shard_holders
from gitops_kd.testing import wait_for
from kdsim.apiserver.access import AccessEntry
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.deploy.uiroutes import ui_paths
from tests.e2e.harness import E2E, NS, hello_app
from tests.helm.chart import render

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_NS = "gitops-kd-system"
SA_USER = f"system:serviceaccount:{SYSTEM_NS}:gitops-kd"
LEASE = "gitops-kd"
# granted for a race only (a PVC KubeDirector's status names before the label selector returns it): not always used
RACE_ONLY = {("get", "", "persistentvolumeclaims")}


def rules(
    kustomization: Path = ROOT / "deploy", *, helm_sets: tuple[str, ...] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ClusterRole rules, Role rules in gitops-kd-system) as `kubectl kustomize deploy/` renders them, or (with
    ``helm_sets``) as `helm template` renders charts/gitops-kd with those --set values."""
    if helm_sets is not None:
        docs = render(*helm_sets)
    else:
        out = subprocess.run(["kubectl", "kustomize", str(kustomization)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    [cluster_role] = [d for d in docs if d["kind"] == "ClusterRole"]
    [role] = [d for d in docs if d["kind"] == "Role"]
    assert role["metadata"]["namespace"] == SYSTEM_NS
    return cluster_role["rules"], role["rules"]


def allows(rule: dict[str, Any], e: AccessEntry) -> bool:
    return (
        e.group in rule["apiGroups"]
        and e.rbac_resource in rule["resources"]
        and e.verb in rule["verbs"]
        and (not rule.get("resourceNames") or e.name in rule["resourceNames"])
    )


def checks(e: AccessEntry) -> list[AccessEntry]:
    """The authorization checks kube-apiserver makes for a request: since 1.35 (feature gate
    AuthorizePodWebsocketUpgradeCreatePermission, on by default) a WebSocket `get` of pods/exec is also
    checked for `create`."""
    if e.resource == "pods" and e.subresource in ("exec", "attach", "portforward") and e.verb == "get":
        return [e, replace(e, verb="create")]
    return [e]


def granted(cluster_rules: list[dict[str, Any]], role_rules: list[dict[str, Any]], e: AccessEntry) -> bool:
    return all(
        any(allows(r, c) for r in cluster_rules) or (c.namespace == SYSTEM_NS and any(allows(r, c) for r in role_rules))
        for c in checks(e)
    )


@pytest.fixture(scope="module")
def used(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[AccessEntry]]:
    """Every request the controller's service account made: start (leader election), 1.0.0 applied,
    upgrade to 2.0.0, a KDCluster scaled, a KDApp no cluster uses created and updated, an out-of-band
    `kubectl set image` reverted, a push webhook to a standby replica, a read of every web UI route (from the UI's
    router), `gitops-kd status` (the fleet and one cluster) as the ServiceAccount, graceful stop (Lease released)."""
    tmp = tmp_path_factory.mktemp("rbac")
    world = E2E(tmp)
    proc: RunProcess | None = None
    try:
        world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
        kubeconfig = token_kubeconfig(world.cluster, tmp / "sa.kubeconfig", SA_USER)
        proc = RunProcess(
            "controller", tmp, kubeconfig, str(world.repo), "--namespace", NS, "--leader-elect", env={"POD_NAMESPACE": SYSTEM_NS}
        )
        world.wait_ready_at("1.0.0", timeout=120)
        world.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
        proc.poll_now()
        world.wait_ready_at("2.0.0", timeout=180)
        cluster_doc = yaml.safe_load(world.template("clusters/hello-dev.yaml"))
        cluster_doc["spec"]["roles"][1]["members"] = 3  # a KDCluster change: update kubedirectorclusters
        world.commit({"clusters/hello-dev.yaml": yaml.safe_dump(cluster_doc, sort_keys=False)}, "3 workers")
        proc.poll_now()
        wait_for(
            "KDCluster scaled",
            lambda: (
                world.rest.get("kubedirector.hpe.com/v1beta1", "kubedirectorclusters", NS, "hello-dev")["spec"]["roles"][1][
                    "members"
                ]
                == 3
            ),
            60,
        )
        # a KDApp no cluster uses is created, then updated (stock KubeDirector holds only the ones in use)
        spare = yaml.safe_load(world.template("apps/hello.yaml"))
        spare["metadata"]["name"] = "spare"
        world.commit({"apps/spare.yaml": yaml.safe_dump(spare, sort_keys=False)}, "a spare app")
        proc.poll_now()
        wait_for(
            "KDApp spare", lambda: world.rest.get_or_none("kubedirector.hpe.com/v1beta1", "kubedirectorapps", NS, "spare"), 60
        )
        spare["spec"]["label"]["description"] = "a spare app, changed"
        world.commit({"apps/spare.yaml": yaml.safe_dump(spare, sort_keys=False)}, "the spare app changed")
        proc.poll_now()
        wait_for(
            "KDApp spare updated",
            lambda: (
                world.rest.get("kubedirector.hpe.com/v1beta1", "kubedirectorapps", NS, "spare")["spec"]["label"]["description"]
                == "a spare app, changed"
            ),
            60,
        )
        sts = world.rest.list("apps/v1", "statefulsets", NS, label_selector="kubedirector.hpe.com/role=worker")
        name = sts["items"][0]["metadata"]["name"]
        out = world.kubectl("set", "image", f"statefulset/{name}", "app=gitops-kd/hello:9.9.9")
        assert out.returncode == 0, out.stderr

        def reverted() -> bool:
            got = world.rest.get("apps/v1", "statefulsets", NS, name)
            images = [c["image"] for c in got["spec"]["template"]["spec"]["containers"] if c["name"] == "app"]
            return images == ["gitops-kd/hello:2.0.0"]

        wait_for("drift reverted", reverted, 60)
        for path in ui_paths(NS, "hello-dev", "hello"):
            with urllib.request.urlopen(proc.url() + path, timeout=30) as page:
                assert page.status == 200, path
        for args in (("status", "-n", NS), ("status", "-n", NS, "hello-dev")):
            shown = subprocess.run(
                [sys.executable, "-c", "from gitops_kd.cli import main; main()", *args, "--kubeconfig", str(kubeconfig)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert shown.returncode == 0 and "hello-dev" in shown.stdout, shown.stdout + shown.stderr
        standby = RunProcess(
            "standby", tmp, kubeconfig, str(world.repo), "--namespace", NS, "--leader-elect", env={"POD_NAMESPACE": SYSTEM_NS}
        )
        try:
            push = urllib.request.Request(standby.url() + "/webhook", data=b"{}", method="POST")
            with urllib.request.urlopen(push, timeout=30) as answer:
                assert "standby" in json.loads(answer.read())["status"]
        finally:
            standby.stop()
        assert proc.stop() == 0, proc.log()[-3000:]
        lease = world.rest.get("coordination.k8s.io/v1", "leases", SYSTEM_NS, LEASE)
        assert not lease["spec"].get("holderIdentity"), "a graceful stop releases the Lease"
        yield world.cluster.access_log.entries(SA_USER)
    finally:
        if proc is not None:
            proc.stop()
        world.close()


SOURCES = {"kustomize": None, "helm": ()}  # deploy/ and the chart with its default values


@pytest.mark.parametrize("source", SOURCES)
def test_every_request_the_controller_makes_is_granted(used: list[AccessEntry], source: str) -> None:
    """Invariant: as deploy/'s (and the chart's) ServiceAccount no request of the controller, its standby, its web UI
    (every route) or `gitops-kd status` would get a 403: deploy/rbac.yaml (charts/gitops-kd) grants each one."""
    cluster_rules, role_rules = rules(helm_sets=SOURCES[source])
    assert used, "no request recorded for the controller's token"
    denied = sorted(
        {
            (c.verb, c.group, c.rbac_resource, c.namespace, c.name if c.resource == "leases" else "")
            for e in used
            for c in checks(e)
            if not granted(cluster_rules, role_rules, c)
        }
    )
    assert not denied, f"{source}'s RBAC does not grant: {denied}"


@pytest.mark.parametrize("source", SOURCES)
def test_every_granted_permission_is_used(used: list[AccessEntry], source: str) -> None:
    """Least privilege: each (verb, group, resource) deploy/ (the chart) grants is used by the run above (RACE_ONLY
    aside)."""
    cluster_rules, role_rules = rules(helm_sets=SOURCES[source])
    unused = []
    for where, rule_list in (("ClusterRole", cluster_rules), ("Role", role_rules)):
        for rule in rule_list:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        one = {**rule, "apiGroups": [group], "resources": [resource], "verbs": [verb]}
                        if (verb, group, resource) not in RACE_ONLY and not any(
                            allows(one, c) and (where == "ClusterRole" or c.namespace == SYSTEM_NS)
                            for e in used
                            for c in checks(e)
                        ):
                            unused.append((where, verb, group, resource))
    assert not unused, f"granted but never used (not least privilege): {unused}"


def test_leader_election_stays_in_the_controllers_namespace(used: list[AccessEntry]) -> None:
    leases = {(e.verb, e.namespace, e.name) for e in used if e.resource == "leases"}
    assert leases and all(ns == SYSTEM_NS for _, ns, _ in leases), leases
    # list: the leader looks for sharded replicas' Leases (one fence whatever the mode, docs/design/sharding.md)
    assert {verb for verb, _, _ in leases} == {"get", "create", "update", "list"}
    assert all(name == LEASE for verb, _, name in leases if verb not in ("create", "list"))


def prune_overlay(tmp: Path) -> Path:
    """An overlay of deploy/ with the optional prune component, as the README tells users to write it."""
    overlay = tmp / "overlay"
    overlay.mkdir()
    rel = os.path.relpath(ROOT / "deploy", overlay)
    (overlay / "kustomization.yaml").write_text(f"resources: [{rel}]\ncomponents: [{rel}/optional/prune]\n")
    return overlay


def test_prune_component_grants_exactly_the_deletes_prune_makes(tmp_path: Path) -> None:
    overlay = prune_overlay(tmp_path)
    rendered = subprocess.run(["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, timeout=60)
    assert rendered.returncode == 0, rendered.stderr
    [deployment] = [d for d in yaml.safe_load_all(rendered.stdout) if d and d["kind"] == "Deployment"]
    assert "--prune" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    cluster_rules, role_rules = rules(overlay)
    base_rules, _ = rules()
    world = E2E(tmp_path / "world")
    proc: RunProcess | None = None
    try:
        world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
        other = world.template("apps/hello.yaml").replace("name: hello\n", "name: other\n", 1)
        world.commit({"apps/other.yaml": other}, "the app other")
        kubeconfig = token_kubeconfig(world.cluster, tmp_path / "sa.kubeconfig", SA_USER)
        proc = RunProcess(
            "controller",
            tmp_path,
            kubeconfig,
            str(world.repo),
            "--namespace",
            NS,
            "--no-leader-elect",
            "--prune",
            env={"POD_NAMESPACE": SYSTEM_NS},
        )
        world.wait_ready_at("1.0.0", timeout=120)
        world.commit({"clusters/hello-dev.yaml": None, "apps/hello.yaml": None}, "retire hello")
        proc.poll_now()

        def names(plural: str) -> set[str]:
            return {o["metadata"]["name"] for o in world.rest.list("kubedirector.hpe.com/v1beta1", plural, NS)["items"]}

        wait_for(
            "hello-dev and hello pruned", lambda: not names("kubedirectorclusters") and names("kubedirectorapps") == {"other"}, 90
        )
        assert proc.stop() == 0, proc.log()[-3000:]
        used = world.cluster.access_log.entries(SA_USER)
    finally:
        if proc is not None:
            proc.stop()
        world.close()
    denied = sorted(
        {(c.verb, c.group, c.rbac_resource) for e in used for c in checks(e) if not granted(cluster_rules, role_rules, c)}
    )
    assert not denied, f"deploy/ with optional/prune does not grant: {denied}"
    extra = [r for r in cluster_rules if r not in base_rules]
    deletes = {(e.group, e.rbac_resource) for e in used if e.verb == "delete" and e.group == "kubedirector.hpe.com"}
    assert extra and deletes == {(g, r) for rule in extra for g in rule["apiGroups"] for r in rule["resources"]}


def test_shards_component_grants_exactly_what_shard_leases_use(tmp_path: Path) -> None:
    """Least privilege, both ways, for --shards: two replicas of `gitops-kd run --shards 2` as the ServiceAccount
    (one stops, handing its shards over) make no request deploy/ with optional/shards would refuse, and each rule
    the component adds is used."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    rel = os.path.relpath(ROOT / "deploy", overlay)
    (overlay / "kustomization.yaml").write_text(f"resources: [{rel}]\ncomponents: [{rel}/optional/shards]\n")
    cluster_rules, role_rules = rules(overlay)
    _, base_role = rules()
    world = E2E(tmp_path / "world")
    procs: list[RunProcess] = []
    try:
        world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
        kubeconfig = token_kubeconfig(world.cluster, tmp_path / "sa.kubeconfig", SA_USER)
        for name in ("replica-a", "replica-b"):
            procs.append(
                RunProcess(
                    name,
                    tmp_path,
                    kubeconfig,
                    str(world.repo),
                    "--namespace",
                    NS,
                    "--shards",
                    "2",
                    "--lease-duration",
                    "4",
                    "--lease-renew-deadline",
                    "3",
                    "--lease-retry-period",
                    "0.5",
                    env={"POD_NAMESPACE": SYSTEM_NS},
                )
            )
        world.wait_ready_at("1.0.0", timeout=120)

        def holders() -> set[str]:
            return {replica_of(identity) for identity in shard_holders(world.rest, SYSTEM_NS).values()}

        wait_for("a shard each", lambda: holders() == {"replica-a", "replica-b"}, 60, 0.1)
        assert procs[0].stop() == 0, procs[0].log()[-3000:]
        wait_for("replica-b holds both", lambda: holders() == {"replica-b"}, 60, 0.1)
        used = world.cluster.access_log.entries(SA_USER)
    finally:
        for proc in procs:
            proc.stop()
        world.close()
    denied = sorted(
        {(c.verb, c.group, c.rbac_resource, c.name) for e in used for c in checks(e) if not granted(cluster_rules, role_rules, c)}
    )
    assert not denied, f"deploy/ with optional/shards does not grant: {denied}"
    extra = [r for r in role_rules if r not in base_role]
    lease_verbs = {e.verb for e in used if e.resource == "leases" and e.verb != "create"}
    assert extra and lease_verbs == {v for rule in extra for v in rule["verbs"]}, (extra, lease_verbs)


def as_set(rule_list: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    return {
        (g, r, v, n)
        for rule in rule_list
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
        for n in rule.get("resourceNames") or ("",)
    }


@pytest.mark.parametrize(
    ("component", "helm_sets"),
    [
        ("prune", ("config.prune=true",)),
        ("admission", ("admission.enabled=true", "config.admission-config=gitops-kd")),  # deploy/'s webhook name
        ("shards", ("config.shards=16",)),
    ],
)
def test_the_charts_options_grant_what_deploys_components_grant(
    tmp_path: Path, component: str, helm_sets: tuple[str, ...]
) -> None:
    """The chart's prune and admission switches grant exactly what deploy/optional/<component> grants (whose rules
    the prune and admission tests check against the requests those features make)."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    rel = os.path.relpath(ROOT / "deploy", overlay)
    (overlay / "kustomization.yaml").write_text(f"resources: [{rel}]\ncomponents: [{rel}/optional/{component}]\n")
    theirs, ours = rules(overlay), rules(helm_sets=helm_sets)
    assert as_set(ours[0]) == as_set(theirs[0]) and as_set(ours[1]) == as_set(theirs[1])
