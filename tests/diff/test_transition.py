"""transition(): which version change a cluster goes through, from the rollout record and what the pods run."""

from __future__ import annotations

from dataclasses import replace

import yaml
from plan.kdworld import HELLO2, NS, REPO, live_app, load_text

from gitops_kd.diff.model import ADOPT, REBUILD, UPGRADE
from gitops_kd.diff.transition import transition
from gitops_kd.observe import ObservedPod, ObservedRollout

FINISHED = ObservedRollout(
    "hello-dev", NS, "uid-1", 1, target_version="2.0.0", from_version="1.0.0", commit="c1", app_version="2.0.0", phase="Idle"
)


def pod(image: str) -> ObservedPod:
    return ObservedPod("kdss-a-0", NS, "controller", 0, "uid-p", "rev-2", "Running", True, False, image=image)


def test_a_new_image_after_a_finished_upgrade_is_a_rebuild_not_that_upgrade_again() -> None:
    doc = yaml.safe_load((REPO / "examples/hello-2.0.0.yaml").read_text())
    doc["spec"]["defaultImageRepoTag"] = "gitops-kd/hello:2.0.0-r2"
    rebuilt = load_text("apps/hello.yaml", doc)
    assert rebuilt.role("controller").image == "gitops-kd/hello:2.0.0-r2"
    t = transition(rebuilt, live_app(HELLO2), FINISHED, pods=[pod("gitops-kd/hello:2.0.0")])
    assert (t.direction, t.from_version, t.target_version, t.rules) == (REBUILD, "2.0.0", "2.0.0", None)


def test_a_finished_upgrade_whose_pods_run_the_app_image_stays_what_it_was() -> None:
    t = transition(HELLO2, live_app(HELLO2), FINISHED, pods=[pod("gitops-kd/hello:2.0.0")])
    assert (t.direction, t.from_version) == (UPGRADE, "1.0.0")  # the steady state after it: no new attempt


def test_an_unfinished_upgrade_with_pods_on_the_old_image_is_still_that_upgrade() -> None:
    running = replace(FINISHED, app_version="1.0.0", phase="Upgrading")
    t = transition(HELLO2, live_app(HELLO2), running, pods=[pod("gitops-kd/hello:1.0.0")])
    assert (t.direction, t.from_version) == (UPGRADE, "1.0.0")
    adopted = replace(FINISHED, from_version="2.0.0")
    assert transition(HELLO2, live_app(HELLO2), adopted, pods=[pod("gitops-kd/hello:2.0.0")]).direction == ADOPT
