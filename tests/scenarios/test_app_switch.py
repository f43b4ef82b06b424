"""A Git commit moving hello-dev's spec.app to a new KDApp hello-v2 (2.0.0, differing only in version and image),
unchanged on every backend: where KubeDirector is stock (embedded, real, kd) the commit is refused before anything is
written with KubeDirector's reason (`The app property is read-only.`); on its live-app-upgrade branch (kd-upgrade)
gitops-kd upgrades natively (docs/design/stock-kubedirector.md): the switch first, then its own role order, gate,
hook and data rules, Ready at 2.0.0 once every pod runs it. Then `git revert` of that commit: the branch goes back
through its rollback while its upgrade record (status.upgradeInfo) lasts, and refuses going back once it is gone."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.e2e.harness import E2E, KD, PodWatch, git, hello_app, wait_for
from tests.scenarios.test_hello import at_1_0_0

pytestmark = pytest.mark.backends
READ_ONLY = "The app property is read-only."
NOT_NEWER = "The candidate app version 1.0.0 is not newer than version 2.0.0"


def _switch_commit(world: E2E) -> dict[str, str]:
    app = yaml.safe_load(hello_app("2.0.0"))
    app["metadata"]["name"] = "hello-v2"
    app["spec"]["services"][0]["endpoint"]["port"] = 8080  # the branch admits image and version changes only
    cluster = yaml.safe_load(world.template("clusters/hello-dev.yaml"))
    cluster["spec"]["app"] = "hello-v2"
    return {
        "apps/hello-v2.yaml": yaml.safe_dump(app, sort_keys=False),
        "clusters/hello-dev.yaml": yaml.safe_dump(cluster, sort_keys=False),
    }


def _refused(world: E2E, sha: str) -> list[str]:
    controller = world.controller
    assert controller is not None
    return list(
        wait_for(
            f"commit {sha[:8]} refused",
            lambda: controller.refusals.last[1] if controller.refusals.last and controller.refusals.last[0] == sha else None,
            60,
        )
    )


def _cluster(world: E2E) -> dict[str, Any]:
    return world.rest.get(KD, "kubedirectorclusters", world.ns, "hello-dev")


def test_a_switch_of_spec_app_is_native_on_the_branch_and_refused_on_stock(world: E2E) -> None:
    pods = at_1_0_0(world)
    watch = PodWatch(world.rest, "hello-dev", expected=3, ns=world.ns)
    sha = world.commit(_switch_commit(world), "hello-dev on hello-v2")
    if world.backend.name != "kd-upgrade":
        lines = _refused(world, sha)
        watch.stop()
        assert any(line.startswith("clusters/hello-dev.yaml: spec.app: ") and READ_ONLY in line for line in lines)
        assert world.rest.get_or_none(KD, "kubedirectorapps", world.ns, "hello-v2") is None
        assert _cluster(world)["spec"]["app"] == "hello" and not watch.deleted
        return
    rollout = world.wait_ready_at("2.0.0", timeout=240)
    watch.stop()
    assert [role for _pod, role, _t in watch.deleted] == ["controller", "worker", "worker"] and watch.max_down == 1
    assert _cluster(world)["spec"]["app"] == "hello-v2"
    assert rollout["status"]["images"] == {"controller": "gitops-kd/hello:2.0.0", "worker": "gitops-kd/hello:2.0.0"}
    for pod in pods:
        assert world.sh(pod, "cat /var/lib/hello/upgrade.log") == "upgraded-to-2.0.0\n"  # the hook
        assert world.sh(pod, "cat /var/lib/hello/user.txt") == "written-at-1.0.0\n"  # the data rules
    kd_upgrading = bool((_cluster(world).get("status") or {}).get("upgradeInfo"))
    git(world.repo, "revert", "--no-edit", sha)
    assert world.controller is not None
    world.controller.trigger_poll()
    if kd_upgrading:  # KubeDirector's record of the upgrade is still there: going back is its rollback
        world.wait_ready_at("1.0.0", timeout=240)
        assert _cluster(world)["spec"]["app"] == "hello"
    else:  # it finished: the branch takes no older app
        assert any(NOT_NEWER in line for line in _refused(world, git(world.repo, "rev-parse", "HEAD")))
