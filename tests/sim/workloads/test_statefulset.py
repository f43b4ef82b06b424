"""The StatefulSet controller over the real API: identity, ordering, revisions, updates, scale, rollout status."""

from __future__ import annotations

from kubernetes import client
from workloads_util import delete_pod, kubectl, pods_by_name, statefulset, sts_ready, wait_for

from kdsim.cluster import EmbeddedCluster


def _create(apps: client.AppsV1Api, namespace: str, body: dict) -> None:
    apps.create_namespaced_stateful_set(namespace, body)


def _revision_of(pod: client.V1Pod) -> str:
    return pod.metadata.labels["controller-revision-hash"]


def test_ordered_ready_creates_pods_in_order_with_identity(
    cluster: EmbeddedCluster, apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    _create(apps, namespace, statefulset("web", replicas=3))
    wait_for(sts_ready(apps, namespace, "web", 3), what="3 ready replicas")
    pods = pods_by_name(core, namespace, "web")
    assert sorted(pods) == ["web-0", "web-1", "web-2"]
    created = sorted(pods.values(), key=lambda p: p.metadata.creation_timestamp)
    assert [p.metadata.name for p in created] == ["web-0", "web-1", "web-2"]
    # OrderedReady: each pod was created only once its predecessor was Ready
    for before, after in zip(created, created[1:]):
        ready = next(c for c in before.status.conditions if c.type == "Ready")
        assert ready.last_transition_time <= after.metadata.creation_timestamp
    sts = apps.read_namespaced_stateful_set("web", namespace)
    for ordinal, name in enumerate(["web-0", "web-1", "web-2"]):
        pod = pods[name]
        assert pod.metadata.labels["statefulset.kubernetes.io/pod-name"] == name
        assert pod.metadata.labels["apps.kubernetes.io/pod-index"] == str(ordinal)
        assert pod.spec.hostname == name and pod.spec.subdomain == "web"
        ref = pod.metadata.owner_references[0]
        assert (ref.kind, ref.name, ref.uid, ref.controller, ref.block_owner_deletion) == (
            "StatefulSet",
            "web",
            sts.metadata.uid,
            True,
            True,
        )
        assert pod.status.phase == "Running" and pod.spec.node_name in ("sim-node", None)  # None: no pods/binding
    assert len({p.status.pod_ip for p in pods.values()}) == 3


def test_revisions_and_hash_labels(apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str) -> None:
    _create(apps, namespace, statefulset("rev", replicas=2, policy="Parallel"))
    wait_for(sts_ready(apps, namespace, "rev", 2))
    status = apps.read_namespaced_stateful_set("rev", namespace).status
    revisions = apps.list_namespaced_controller_revision(namespace).items
    assert [r.metadata.name for r in revisions] == [status.update_revision]
    assert status.current_revision == status.update_revision
    revision = revisions[0]
    assert revision.revision == 1 and revision.metadata.name.startswith("rev-")
    assert revision.metadata.labels["controller.kubernetes.io/hash"] == revision.metadata.name[len("rev-") :]
    assert revision.data["spec"]["template"]["$patch"] == "replace"
    assert {_revision_of(p) for p in pods_by_name(core, namespace, "rev").values()} == {status.update_revision}


def _set_image(apps: client.AppsV1Api, namespace: str, name: str, image: str) -> None:
    apps.patch_namespaced_stateful_set(
        name, namespace, {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}}
    )


def test_rolling_update_with_partition_replaces_high_ordinals_only(
    apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    body = statefulset("part", replicas=3, strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}})
    _create(apps, namespace, body)
    wait_for(sts_ready(apps, namespace, "part", 3))
    before = pods_by_name(core, namespace, "part")
    old_revision = apps.read_namespaced_stateful_set("part", namespace).status.update_revision
    _set_image(apps, namespace, "part", "example.com/web:2")

    def rolled() -> bool:
        st = apps.read_namespaced_stateful_set("part", namespace).status
        pods = pods_by_name(core, namespace, "part")
        return (
            st.updated_replicas == 2
            and st.ready_replicas == 3
            and len(pods) == 3
            and all(p.status.phase == "Running" for p in pods.values())
        )

    wait_for(rolled, what="ordinals 2 and 1 updated")
    after = pods_by_name(core, namespace, "part")
    status = apps.read_namespaced_stateful_set("part", namespace).status
    assert status.update_revision != old_revision and status.current_revision == old_revision
    assert after["part-0"].metadata.uid == before["part-0"].metadata.uid
    assert _revision_of(after["part-0"]) == old_revision
    assert after["part-0"].spec.containers[0].image == "example.com/web:1"
    for name in ("part-1", "part-2"):
        assert after[name].metadata.uid != before[name].metadata.uid
        assert _revision_of(after[name]) == status.update_revision
        assert after[name].spec.containers[0].image == "example.com/web:2"
    # highest ordinal first: part-2 was recreated before part-1
    assert after["part-2"].metadata.creation_timestamp <= after["part-1"].metadata.creation_timestamp
    assert len(apps.list_namespaced_controller_revision(namespace).items) == 2


def test_on_delete_replaces_only_deleted_pods(apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str) -> None:
    _create(apps, namespace, statefulset("od", replicas=3, policy="Parallel", strategy={"type": "OnDelete"}))
    wait_for(sts_ready(apps, namespace, "od", 3))
    before = pods_by_name(core, namespace, "od")
    _set_image(apps, namespace, "od", "example.com/web:2")

    def observed() -> bool:
        s = apps.read_namespaced_stateful_set("od", namespace)
        return s.status.observed_generation == s.metadata.generation and s.status.updated_replicas == 0

    wait_for(observed, what="new generation observed")
    update_revision = apps.read_namespaced_stateful_set("od", namespace).status.update_revision
    unchanged = pods_by_name(core, namespace, "od")
    assert {n: p.metadata.uid for n, p in unchanged.items()} == {n: p.metadata.uid for n, p in before.items()}

    delete_pod(core, namespace, "od-1")

    def replaced() -> client.V1Pod | None:
        pod = pods_by_name(core, namespace, "od").get("od-1")
        if pod and pod.metadata.uid != before["od-1"].metadata.uid and pod.status.phase == "Running":
            return pod
        return None

    new = wait_for(replaced, what="od-1 recreated")
    assert _revision_of(new) == update_revision and new.spec.containers[0].image == "example.com/web:2"
    wait_for(lambda: apps.read_namespaced_stateful_set("od", namespace).status.updated_replicas == 1)
    after = pods_by_name(core, namespace, "od")
    for name in ("od-0", "od-2"):
        assert after[name].metadata.uid == before[name].metadata.uid
        assert after[name].spec.containers[0].image == "example.com/web:1"


def test_rollout_status_and_scale_down(
    cluster: EmbeddedCluster, apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    _create(apps, namespace, statefulset("ro", replicas=3, strategy={"type": "RollingUpdate"}))
    done = kubectl(cluster, "-n", namespace, "rollout", "status", "statefulset/ro", "--timeout=30s")
    assert done.returncode == 0, done.stderr
    assert "roll out complete: 3 new pods have been updated" in done.stdout
    _set_image(apps, namespace, "ro", "example.com/web:2")
    done = kubectl(cluster, "-n", namespace, "rollout", "status", "statefulset/ro", "--timeout=30s")
    assert done.returncode == 0, done.stderr
    status = apps.read_namespaced_stateful_set("ro", namespace).status
    assert status.current_revision == status.update_revision and status.updated_replicas == 3
    assert {p.spec.containers[0].image for p in pods_by_name(core, namespace, "ro").values()} == {"example.com/web:2"}

    apps.patch_namespaced_stateful_set_scale("ro", namespace, {"spec": {"replicas": 1}})
    wait_for(lambda: sorted(pods_by_name(core, namespace, "ro")) == ["ro-0"], what="scaled down to ro-0")
    wait_for(sts_ready(apps, namespace, "ro", 1))


def test_on_delete_rollout_status_is_refused(cluster: EmbeddedCluster, apps: client.AppsV1Api, namespace: str) -> None:
    _create(apps, namespace, statefulset("odr", replicas=1, strategy={"type": "OnDelete"}))
    wait_for(sts_ready(apps, namespace, "odr", 1))
    done = kubectl(cluster, "-n", namespace, "rollout", "status", "statefulset/odr", "--timeout=10s")
    assert done.returncode != 0
    assert "rollout status is only available for RollingUpdate strategy type" in done.stderr


def test_pvcs_created_per_ordinal_and_kept_on_scale_down(apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str) -> None:
    _create(apps, namespace, statefulset("db", replicas=2, policy="Parallel", claims=True))
    wait_for(sts_ready(apps, namespace, "db", 2))
    claims = {c.metadata.name: c for c in core.list_namespaced_persistent_volume_claim(namespace).items}
    assert sorted(claims) == ["data-db-0", "data-db-1"]
    assert all(c.status.phase == "Bound" and c.spec.volume_name for c in claims.values())
    assert claims["data-db-0"].metadata.labels["app"] == "db"
    pod = pods_by_name(core, namespace, "db")["db-1"]
    vol = next(v for v in pod.spec.volumes if v.name == "data")
    assert vol.persistent_volume_claim.claim_name == "data-db-1"
    apps.patch_namespaced_stateful_set_scale("db", namespace, {"spec": {"replicas": 1}})
    wait_for(lambda: sorted(pods_by_name(core, namespace, "db")) == ["db-0"])
    assert sorted(c.metadata.name for c in core.list_namespaced_persistent_volume_claim(namespace).items) == [
        "data-db-0",
        "data-db-1",
    ]


def test_deleting_the_set_deletes_its_pods(apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str) -> None:
    _create(apps, namespace, statefulset("gone", replicas=2, policy="Parallel"))
    wait_for(sts_ready(apps, namespace, "gone", 2))
    apps.delete_namespaced_stateful_set("gone", namespace)
    wait_for(lambda: not pods_by_name(core, namespace, "gone"), what="pods garbage-collected")
