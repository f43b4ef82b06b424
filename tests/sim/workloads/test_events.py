"""Events of the simulated StatefulSet controller, scheduler and kubelet, with the real reasons and messages, as
`kubectl describe` shows them; the kubelet keeps the API server's qosClass (#18)."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from workloads_util import kubectl, statefulset, sts_ready, wait_for

from kdsim.cluster import EmbeddedCluster


def _events(core: client.CoreV1Api, namespace: str, name: str) -> list[tuple[str, str, str, str]]:
    """(reason, message, fieldPath, reporting component) of the events about object `name`, oldest first."""
    items = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
    items.sort(key=lambda e: e.metadata.name.rsplit(".", 1)[-1].rjust(20, "0"))
    return [(e.reason, e.message, e.involved_object.field_path or "", e.reporting_component) for e in items]


def test_describe_shows_the_controllers_events_and_the_pod_keeps_its_qos_class(
    cluster: EmbeddedCluster, apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    resources: dict[str, Any] = {"resources": {"requests": {"cpu": "10m"}}}
    apps.create_namespaced_stateful_set(namespace, statefulset("ev", replicas=1, claims=True, container=resources))
    wait_for(sts_ready(apps, namespace, "ev", 1), what="ev ready")
    pod = core.read_namespaced_pod("ev-0", namespace)
    assert pod.status.qos_class == "Burstable"

    sts_events = _events(core, namespace, "ev")
    assert (
        "SuccessfulCreate",
        "create Claim data-ev-0 Pod ev-0 in StatefulSet ev success",
        "",
        "statefulset-controller",
    ) in sts_events
    assert ("SuccessfulCreate", "create Pod ev-0 in StatefulSet ev successful", "", "statefulset-controller") in sts_events
    path = "spec.containers{app}"
    pod_events = wait_for(lambda: e if len(e := _events(core, namespace, "ev-0")) >= 4 else None, what="ev-0's events")
    assert pod_events[0] == ("Scheduled", f"Successfully assigned {namespace}/ev-0 to sim-node", "", "default-scheduler")
    reasons = [e[0] for e in pod_events[1:]]
    assert reasons in (["Pulling", "Pulled", "Created", "Started"], ["Pulled", "Created", "Started"])
    pulled = next(e for e in pod_events if e[0] == "Pulled")
    assert pulled[1] == 'Container image "example.com/web:1" already present on machine' or (
        pulled[1].startswith('Successfully pulled image "example.com/web:1" in ') and pulled[1].endswith(" bytes.")
    )
    assert pod_events[-2:] == [
        ("Created", "Created container app", path, "kubelet"),
        ("Started", "Started container app", path, "kubelet"),
    ]
    described = kubectl(cluster, "describe", "pod", "ev-0", "-n", namespace)
    assert described.returncode == 0, described.stderr
    events_part = described.stdout.split("Events:", 1)[1]
    for line in ("Scheduled", "default-scheduler", "Started container app", "kubelet"):
        assert line in events_part, described.stdout
    assert [ln.split() for ln in described.stdout.splitlines() if ln.startswith("QoS Class:")] == [["QoS", "Class:", "Burstable"]]

    apps.patch_namespaced_stateful_set_scale("ev", namespace, {"spec": {"replicas": 0}})
    wait_for(
        lambda: (
            ("SuccessfulDelete", "delete Pod ev-0 in StatefulSet ev successful", "", "statefulset-controller")
            in _events(core, namespace, "ev")
        ),
        what="SuccessfulDelete",
    )
    wait_for(lambda: ("Killing", "Stopping container app", path, "kubelet") in _events(core, namespace, "ev-0"), what="Killing")


def test_crash_loop_and_failing_probe_warnings(
    cluster: EmbeddedCluster, apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    from kdsim.images import ImageBehavior, store_for

    store_for(cluster).add("example.com/crashing:1", {}, behavior=ImageBehavior(crash_loop=True))
    apps.create_namespaced_stateful_set(namespace, statefulset("crash", replicas=1, image="example.com/crashing:1"))
    uid = wait_for(
        lambda: next((p.metadata.uid for p in core.list_namespaced_pod(namespace).items if p.metadata.name == "crash-0"), None),
        what="crash-0 created",
    )
    back_off = (
        "BackOff",
        f"Back-off restarting failed container app in pod crash-0_{namespace}({uid})",
        "spec.containers{app}",
        "kubelet",
    )
    wait_for(lambda: back_off in _events(core, namespace, "crash-0"), what="the BackOff warning")

    probe = {"readinessProbe": {"exec": {"command": ["sh", "-c", "echo not yet; exit 1"]}, "periodSeconds": 1}}
    apps.create_namespaced_stateful_set(namespace, statefulset("unready", replicas=1, container=probe))
    unhealthy = ("Unhealthy", "Readiness probe failed: not yet\n", "spec.containers{app}", "kubelet")
    wait_for(lambda: unhealthy in _events(core, namespace, "unready-0"), what="the Unhealthy warning")
    event = next(
        e
        for e in core.list_namespaced_event(namespace, field_selector="involvedObject.name=unready-0").items
        if e.reason == "Unhealthy"
    )
    assert event.type == "Warning"
