"""The hello scenarios, unchanged on both backends (--backend=embedded|real): the upgrade 1.0.0 -> 2.0.0 in role
order with its gate, hook and data rules; drift reverted; `git revert` and a revert of the revert; nodePorts
kept by the upgrade and by a drift revert (the real API server allocates them; see tests/real/test_node_ports)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.testing import pod_ready
from tests.e2e.harness import CLUSTER_LABEL, E2E, PodWatch, git, wait_for

pytestmark = pytest.mark.backends
ROLE_LABEL = "kubedirector.hpe.com/role"
STOCK, BRANCH = "stock KubeDirector:", "KubeDirector's live-app-upgrade branch:"


def node_ports(world: E2E) -> dict[tuple[str, str], int]:
    """(member Service, port name) -> nodePort, for the hello-dev member Services."""
    services = world.rest.list("v1", "services", world.ns, label_selector=f"{CLUSTER_LABEL}=hello-dev")["items"]
    return {
        (s["metadata"]["name"], p.get("name", "")): p["nodePort"]
        for s in services
        if s["metadata"]["labels"].get(ROLE_LABEL)
        for p in s["spec"].get("ports") or []
        if p.get("nodePort")
    }


def at_1_0_0(world: E2E) -> list[str]:
    """The controller deploys hello 1.0.0; every pod then holds user data written at 1.0.0. Returns the pods."""
    world.start_controller()
    world.wait_ready_at("1.0.0", timeout=180)
    world.wait_settled(timeout=120)
    # `gitops-kd status` names the KubeDirector the API server's CRDs show: the branch on kd-upgrade, else stock
    said = subprocess.run(
        [
            str(Path(sys.executable).parent / "gitops-kd"),
            "status",
            "--kubeconfig",
            str(world.backend.kubeconfig),
            "--namespace",
            world.ns,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert f"KubeDirector: {BRANCH if world.backend.name == 'kd-upgrade' else STOCK}" in said, said
    roles = world.pods_by_role()
    pods = roles["controller"] + roles["worker"]
    for pod in pods:
        world.sh(pod, "echo written-at-1.0.0 > /var/lib/hello/user.txt")
    if world.backend.name != "embedded":  # a real server gives every NodePort Service port a nodePort
        assert node_ports(world), "no nodePort allocated: is the member Service type NodePort?"
    return pods


def upgrade_to_2_0_0(world: E2E) -> tuple[dict[str, Any], PodWatch]:
    watch = PodWatch(world.rest, "hello-dev", expected=3, ns=world.ns)
    world.commit({"apps/hello.yaml": world.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    rollout = world.wait_ready_at("2.0.0", timeout=240)
    watch.stop()
    return rollout, watch


def test_upgrade_in_role_order_with_gate_hook_and_data_keeping_node_ports(world: E2E) -> None:
    pods = at_1_0_0(world)
    ports_before = node_ports(world)
    rollout, watch = upgrade_to_2_0_0(world)
    # roleOrder [controller, worker], one member at a time
    assert [role for _pod, role, _t in watch.deleted] == ["controller", "worker", "worker"]
    assert watch.max_down == 1
    assert rollout["status"]["history"][-1] == {**rollout["status"]["history"][-1], "version": "2.0.0", "fromVersion": "1.0.0"}
    # the stage the planner records per pod survives the API server's pruning (the CRD's structural schema lists it)
    assert {rollout["status"]["pods"][pod].get("stage") for pod in pods} == {"done"}, rollout["status"]["pods"]
    for pod in pods:
        assert world.sh(pod, "cat /var/lib/hello/upgrade.log") == "upgraded-to-2.0.0\n"  # the postUpgrade hook
        assert world.sh(pod, "cat /var/lib/hello/user.txt") == "written-at-1.0.0\n"  # migrate: old data merged
        assert world.sh(pod, "cat /var/lib/hello/schema-version") == "2\n"
        assert world.sh(pod, "cat /var/lib/hello/new-in-2") == "yes\n"  # the 2.0.0 image's copy installed
        assert world.sh(pod, "cat /opt/hello/cache/index") == "cache-2.0.0\n"  # discard
    # the gate (grep upgrade.log in the member just upgraded) held each next deletion until the hook had run:
    # the hook's file exists in every member, and the members went down one after the other (max_down == 1)
    ports_after = node_ports(world)
    assert {k: v for k, v in ports_after.items() if k in ports_before} == {
        k: v for k, v in ports_before.items() if k in ports_after
    }


def test_drift_is_reverted_and_node_ports_kept(world: E2E) -> None:
    at_1_0_0(world)
    ports_before = node_ports(world)
    sts = next(
        s
        for s in world.rest.list("apps/v1", "statefulsets", world.ns)["items"]
        if s["metadata"]["labels"][ROLE_LABEL] == "worker"
    )
    name = sts["metadata"]["name"]
    edited = world.kubectl("set", "image", f"statefulset/{name}", "app=gitops-kd/hello:9.9.9")
    assert edited.returncode == 0, edited.stderr

    def image() -> str:
        live = world.rest.get("apps/v1", "statefulsets", world.ns, name)
        return str(live["spec"]["template"]["spec"]["containers"][0]["image"])

    wait_for("the image edit reverted", lambda: image() == "gitops-kd/hello:1.0.0", 60)
    # a member Service's port changed out of band (a JSON patch: its nodePort stays), then reverted
    svc = next(
        s
        for s in world.rest.list("v1", "services", world.ns, label_selector=f"{CLUSTER_LABEL}=hello-dev")["items"]
        if s["metadata"]["labels"].get(ROLE_LABEL) == "worker"
    )
    svc_name, port = svc["metadata"]["name"], svc["spec"]["ports"][0]["port"]
    edited = world.kubectl(
        "patch", "service", svc_name, "--type=json", '-p=[{"op": "replace", "path": "/spec/ports/0/port", "value": 9999}]'
    )
    assert edited.returncode == 0, edited.stderr
    wait_for(
        "the Service port edit reverted",
        lambda: world.rest.get("v1", "services", world.ns, svc_name)["spec"]["ports"][0]["port"] == port,
        60,
    )
    world.wait_settled(timeout=120)
    assert all(p["spec"]["containers"][0]["image"] == "gitops-kd/hello:1.0.0" for p in world.pods())
    assert node_ports(world) == ports_before


def test_git_revert_then_revert_of_the_revert(world: E2E) -> None:
    pods = at_1_0_0(world)
    upgrade_to_2_0_0(world)
    world.wait_settled(timeout=120)
    for pod in pods:
        world.sh(pod, "echo written-at-2.0.0 > /var/lib/hello/user.txt")
    git(world.repo, "revert", "--no-edit", "HEAD")
    assert world.controller is not None
    world.controller.trigger_poll()
    rollout = world.wait_ready_at("1.0.0", timeout=240)
    assert rollout["status"]["history"][-1]["fromVersion"] == "2.0.0"
    world.wait_settled(timeout=120)
    for pod in pods:  # restore: the copy the upgrade set aside comes back; 2.0.0's files are gone
        assert world.sh(pod, "cat /var/lib/hello/user.txt") == "written-at-1.0.0\n"
        assert world.sh(pod, "test -e /var/lib/hello/new-in-2 && echo present || echo absent") == "absent\n"
    git(world.repo, "revert", "--no-edit", "HEAD")
    world.controller.trigger_poll()
    rollout = world.wait_ready_at("2.0.0", timeout=240)
    assert rollout["status"]["history"][-1]["fromVersion"] == "1.0.0"
    world.wait_settled(timeout=120)
    for pod in pods:
        assert world.sh(pod, "cat /var/lib/hello/new-in-2") == "yes\n"
        assert world.sh(pod, "cat /var/lib/hello/upgrade.log") == "upgraded-to-2.0.0\n"


def test_a_member_kubedirector_adds_after_the_upgrade_runs_the_new_version(world: E2E) -> None:
    """Invariant: the version Git asks for holds for members KubeDirector adds later. On stock KubeDirector the
    KDApp stays held at 1.0.0 while hello-dev uses it; the StatefulSet template carries 2.0.0, so a worker added by a
    commit (KubeDirector raises the StatefulSet's replicas) starts on 2.0.0, and the KDRollout is Ready at 2.0.0
    only once it runs."""
    at_1_0_0(world)
    upgrade_to_2_0_0(world)
    world.wait_settled(timeout=120)
    cluster = (world.repo / "clusters" / "hello-dev.yaml").read_text()
    worker = cluster.index("- id: worker")
    grown = cluster[:worker] + cluster[worker:].replace("members: 2", "members: 3", 1)
    assert grown != cluster
    world.commit({"clusters/hello-dev.yaml": grown}, "hello-dev: a third worker")
    assert world.controller is not None
    world.controller.trigger_poll()

    def three_workers_on_2_0_0() -> bool:
        pods = world.pods()
        return len(pods) == 4 and all(
            pod_ready(p) and p["spec"]["containers"][0]["image"] == "gitops-kd/hello:2.0.0" for p in pods
        )

    wait_for("a third worker Ready on 2.0.0", three_workers_on_2_0_0, 180)
    rollout = world.wait_ready_at("2.0.0", timeout=120)
    assert rollout["status"]["history"][-1]["version"] == "2.0.0"


def test_an_unlabelled_role_statefulset_is_still_reverted_and_relabelled(world: E2E) -> None:
    """Invariant (issue 28, 4, no admission webhook): a role StatefulSet is the cluster's by KubeDirector's
    controller ownerReference, its role by KubeDirector's status: after `kubectl label sts <worker>
    kubedirector.hpe.com/kdcluster-`, `kubectl set image` on it is reverted and the label is put back (the facts
    the controller relies on hold for KubeDirector itself on the kd backends)."""
    at_1_0_0(world)
    sts = next(
        s
        for s in world.rest.list("apps/v1", "statefulsets", world.ns)["items"]
        if s["metadata"]["labels"][ROLE_LABEL] == "worker"
    )
    name = sts["metadata"]["name"]
    for change in (
        ["label", "statefulset", name, f"{CLUSTER_LABEL}-"],
        ["set", "image", f"statefulset/{name}", "app=gitops-kd/hello:9.9.9"],
    ):
        done = world.kubectl(*change)
        assert done.returncode == 0, done.stderr

    def live() -> dict[str, Any]:
        return world.rest.get("apps/v1", "statefulsets", world.ns, name)

    wait_for(
        "the image edit reverted and the label put back",
        lambda: (
            (live()["spec"]["template"]["spec"]["containers"][0]["image"], live()["metadata"]["labels"].get(CLUSTER_LABEL))
            == ("gitops-kd/hello:1.0.0", "hello-dev")
        ),
        60,
    )
    world.wait_settled(timeout=120)
    assert all(p["spec"]["containers"][0]["image"] == "gitops-kd/hello:1.0.0" for p in world.pods())
