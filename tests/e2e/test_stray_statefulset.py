"""A second StatefulSet labelled with a role is not the role's, against the embedded cluster."""

from __future__ import annotations

import copy

from gitops_kd.kd.layout import ROLE_LABEL
from gitops_kd.testing import pod_ready, wait_for
from tests.e2e.harness import E2E, NS, hello_app

KEEP = ("name", "namespace", "labels", "annotations", "ownerReferences")


def test_an_upgrade_ignores_a_copy_of_a_role_statefulset_and_its_pods(e2e: E2E) -> None:
    """Invariant: a role's members are the pods of the StatefulSet KubeDirector's status names for it. With a copy
    of the worker StatefulSet under another name (owned by the KDCluster, the same labels, its own pods running),
    a 1.0.0 -> 2.0.0 upgrade finishes and none of the copy's pods is replaced. Taken for members, they were
    deleted over and over at a revision their own StatefulSet never gets (bench/shards.py's fleet seeding made such
    a copy when the simulated KubeDirector created its own StatefulSet beside the seeded one)."""
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    [worker] = [
        s for s in e2e.rest.list("apps/v1", "statefulsets", NS)["items"] if s["metadata"]["labels"][ROLE_LABEL] == "worker"
    ]
    stray = copy.deepcopy(worker)
    stray.pop("status", None)
    stray["metadata"] = {k: v for k, v in worker["metadata"].items() if k in KEEP}
    stray["metadata"]["name"] = name = f"{worker['metadata']['name']}-copy"
    e2e.rest.create("apps/v1", "statefulsets", NS, stray)
    want = int(worker["spec"]["replicas"])

    def stray_pods() -> dict[str, str]:
        pods = [p for p in e2e.pods() if p["metadata"]["name"].rsplit("-", 1)[0] == name]
        return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods if pod_ready(p)}

    before = wait_for("the copy's pods Ready", lambda: (p := stray_pods()) and len(p) == want and p, 60)
    e2e.commit({"apps/hello.yaml": hello_app("2.0.0")}, "hello 2.0.0")
    e2e.wait_ready_at("2.0.0", timeout=120)
    members = [p for p in e2e.pods() if p["metadata"]["name"].rsplit("-", 1)[0] == worker["metadata"]["name"]]
    images = {c["image"] for p in members for c in p["spec"]["containers"] if c["name"] == "app"}
    assert len(members) == want and images == {"gitops-kd/hello:2.0.0"}, (members, images)
    assert stray_pods() == before, "a pod of the copy was replaced"
