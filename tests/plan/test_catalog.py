"""Whole rollouts of the shared KubeDirector catalog apps (new image + an upgrade stanza) through the planner."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitops_kd.plan import actions as A
from gitops_kd.plan import plan
from plan.kdworld import NS, FakeCluster, desired, live_cluster, load_file, load_text, observed


def _catalog(kd_shared: Path):
    apps = [a for p in sorted((kd_shared / "catalog").iterdir()) for a in load_file(p, "apps/" + p.name)]
    return {a.name: a for a in apps}


CLUSTERS = [
    "cr-cluster-cassandra311-stor.yaml",
    "cr-cluster-centos7.yaml",
    "cr-cluster-kafka55-stor.yaml",
    "cr-cluster-spark245-stor.yaml",
]


@pytest.mark.parametrize("cluster_file", CLUSTERS)
def test_catalog_app_upgrade_rolls_every_member_once(kd_shared: Path, cluster_file: str) -> None:
    cluster = load_file(kd_shared / "clusters" / cluster_file, "clusters/" + cluster_file)[0]
    old = _catalog(kd_shared)[cluster.app]
    body = old.body
    body["spec"]["version"] = "99.0.0"
    for role in body["spec"]["roles"]:
        if role.get("imageRepoTag"):
            role["imageRepoTag"] += "-new"
    if body["spec"].get("defaultImageRepoTag"):
        body["spec"]["defaultImageRepoTag"] += "-new"
    order = list(reversed([r["id"] for r in body["spec"]["roles"]]))
    body["spec"]["upgrade"] = {"roleOrder": order, "from": [{"versions": "<99.0.0", "default": "keep"}]}
    new = load_text("apps/" + old.name + ".json", body)
    world = FakeCluster(observed((old,), (live_cluster(old, cluster),)))
    want = desired(new, cluster)
    key = (NS, cluster.name)
    deleted: list[str] = []
    for _ in range(400):
        action = plan(want, world.state, now=world.now).next()
        if action is None:
            break
        world.apply(action)
        if isinstance(action, A.DeletePod):
            deleted.append(action.pod)
        assert len(world.down(key)) <= 1
    else:
        raise AssertionError("no steady state")
    live = world.cluster(key)
    assert sorted(deleted) == sorted(p.name for p in live.all_pods())
    roles_in_order = [r for r in order if live.statefulset(r) is not None]
    assert [name.rsplit("-", 1)[0] for name in deleted] == [f"kdss-{r}" for r in roles_in_order for _ in live.role_pods(r)]
    images = {c["image"] for sts in live.statefulsets.values() for c in sts.template["spec"]["containers"]}
    assert all(i.endswith("-new") for i in images)
    assert live.rollout.app_version == "99.0.0" and live.rollout.phase == "Idle"
