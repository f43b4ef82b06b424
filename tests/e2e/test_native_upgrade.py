"""KubeDirector's live-app-upgrade branch (the embedded KubeDirector in its "live-app-upgrade" mode): a Git commit
moving hello-dev's spec.app to a new KDApp upgrades natively. gitops-kd marks the app it leaves `upgradable`,
switches spec.app as the attempt's first write (the branch patches the StatefulSets' image; OnDelete keeps the pods),
then replaces the pods in its own role order with its gate and hook; a switch the branch would refuse is a refused
commit naming KubeDirector's reason, and `git revert` mid-upgrade goes back through the branch's rollback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.harness import E2E, KD, TEMPLATE, git, hello_app, wait_for

V2 = "gitops-kd/hello:2.0.0"


@pytest.fixture
def branch(tmp_path: Path) -> Iterator[E2E]:
    world = E2E(tmp_path, kd_app_edits="live-app-upgrade")
    try:
        yield world
    finally:
        world.close()


def hello_v2(**changes: Any) -> str:
    """hello 2.0.0 as the KDApp hello-v2, differing from hello 1.0.0 only where the branch allows (image, version):
    the example's Service port change is left out; ``changes`` replace upgrade-stanza or spec fields."""
    doc = yaml.safe_load(hello_app("2.0.0"))
    doc["metadata"]["name"] = "hello-v2"
    doc["spec"]["services"][0]["endpoint"]["port"] = 8080
    doc["spec"]["upgrade"].update(changes.pop("upgrade", {}))
    doc["spec"].update(changes)
    return yaml.safe_dump(doc, sort_keys=False)


def on_app(app: str) -> str:
    doc = yaml.safe_load((TEMPLATE / "clusters" / "hello-dev.yaml").read_text())
    doc["spec"]["app"] = app
    return yaml.safe_dump(doc, sort_keys=False)


def _cluster(world: E2E) -> dict[str, Any]:
    return world.rest.get(KD, "kubedirectorclusters", world.ns, "hello-dev")


def _images(world: E2E) -> dict[str, str]:
    return {p["metadata"]["name"]: next(c["image"] for c in p["spec"]["containers"] if c["name"] == "app") for p in world.pods()}


def test_a_switch_of_spec_app_upgrades_natively_in_role_order_with_gate_and_hook(branch: E2E) -> None:
    """Invariants: the switch is the attempt's first write and runs only once every role StatefulSet is OnDelete
    (KubeDirector's image patch replaces no pod itself); pods are replaced controller first, each after the gate
    passed on the one before; Ready at 2.0.0 only when every pod runs 2.0.0."""
    controller = branch.start_controller()
    branch.wait_ready_at("1.0.0")
    branch.wait_settled()
    assert branch.rest.get(KD, "kubedirectorapps", branch.ns, "hello")["spec"].get("upgradable") is None
    branch.log.clear()
    branch.commit({"apps/hello-v2.yaml": hello_v2(), "clusters/hello-dev.yaml": on_app("hello-v2")}, "hello-v2")
    ready = branch.wait_ready_at("2.0.0", timeout=180)
    assert set(_images(branch).values()) == {V2} and ready["status"]["images"] == {"controller": V2, "worker": V2}
    assert _cluster(branch)["spec"]["app"] == "hello-v2"
    assert branch.rest.get(KD, "kubedirectorapps", branch.ns, "hello")["spec"]["upgradable"] is True
    writes = [
        line
        for line in branch.log
        if not line.startswith(("start upgrade", "record", "apply KubeDirectorApp", "mark KubeDirectorApp", "note"))
    ]
    assert writes[0].startswith("switch KubeDirectorCluster"), branch.log
    deleted = [line.split()[2].split("/")[1] for line in branch.log if line.startswith("delete pod")]
    roles = branch.pods_by_role()
    assert deleted[:1] == roles["controller"] and sorted(deleted[1:]) == roles["worker"], branch.log
    assert all(branch.sh(p, "cat /var/lib/hello/upgrade.log").strip() == "upgraded-to-2.0.0" for ps in roles.values() for p in ps)
    wait_for("KubeDirector to finish its upgrade record", lambda: not _cluster(branch)["status"].get("upgradeInfo"), 60)
    assert controller.source.applied_commit == git(branch.repo, "rev-parse", "HEAD")


def test_a_switch_the_branch_refuses_is_a_refused_commit_with_its_reason(branch: E2E) -> None:
    """Invariant: nothing is written for a refused switch (no KDApp created, no spec.app change, no pod touched)."""
    controller = branch.start_controller()
    branch.wait_ready_at("1.0.0")
    branch.wait_settled()
    label = {"name": "Hello", "description": "another description"}
    sha = branch.commit(
        {"apps/hello-v2.yaml": hello_v2(label=label), "clusters/hello-dev.yaml": on_app("hello-v2")}, "a too-different hello-v2"
    )
    refusal = wait_for(
        "the commit refused",
        lambda: controller.refusals.last if controller.refusals.last and controller.refusals.last[0] == sha else None,
        30,
    )
    assert any(
        line.startswith("clusters/hello-dev.yaml: spec.app: ")
        and "The candidate app hello-v2 spec is too different from the actual app hello spec." in line
        for line in refusal[1]
    ), refusal
    assert branch.rest.get_or_none(KD, "kubedirectorapps", branch.ns, "hello-v2") is None
    assert _cluster(branch)["spec"]["app"] == "hello"


def test_git_revert_mid_upgrade_goes_back_through_the_branchs_rollback(branch: E2E) -> None:
    """With the upgrade held at its gate after the controller pod, `git revert` of the switch commit switches spec.app
    back to hello (the branch's rollback to status.upgradeInfo.prevApp), marking hello-v2 upgradable first, and the
    controller pod goes back to 1.0.0: Ready at 1.0.0, every pod at 1.0.0. Invariant: the revert touches only the
    members already moved: the two workers, still on 1.0.0, are never deleted (same uids)."""
    branch.start_controller()
    branch.wait_ready_at("1.0.0")
    branch.wait_settled()
    held = {"gate": {"exec": {"command": ["/bin/sh", "-c", "false"]}, "periodSeconds": 1, "timeoutSeconds": 600}}
    sha = branch.commit(
        {"apps/hello-v2.yaml": hello_v2(upgrade=held), "clusters/hello-dev.yaml": on_app("hello-v2")},
        "hello-v2 with a gate that holds",
    )
    controller_pod = branch.pods_by_role()["controller"][0]
    wait_for("the controller pod at 2.0.0", lambda: _images(branch).get(controller_pod) == V2, 120)
    assert _cluster(branch)["status"]["upgradeInfo"]["prevApp"] == "hello"
    workers = {p["metadata"]["name"]: p["metadata"]["uid"] for p in branch.pods() if p["metadata"]["name"] != controller_pod}
    assert set(_images(branch)[w] for w in workers) == {"gitops-kd/hello:1.0.0"}
    branch.log.clear()
    git(branch.repo, "revert", "--no-edit", sha)
    assert branch.controller is not None
    branch.controller.trigger_poll()
    branch.wait_ready_at("1.0.0", timeout=180)
    assert _cluster(branch)["spec"]["app"] == "hello"
    assert set(_images(branch).values()) == {"gitops-kd/hello:1.0.0"}
    assert branch.rest.get(KD, "kubedirectorapps", branch.ns, "hello-v2")["spec"]["upgradable"] is True
    deleted = [line.split()[2].split("/")[1] for line in branch.log if line.startswith("delete pod")]
    assert deleted == [controller_pod], branch.log
    assert {n: u for n, u in ((p["metadata"]["name"], p["metadata"]["uid"]) for p in branch.pods()) if n in workers} == workers
