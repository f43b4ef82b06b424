"""pod_health on pods whose status is rendered by the embedded kubelet's own status code."""

from __future__ import annotations

from typing import Any

import pytest

from gitops_kd.health import HealthStatus, health_of, pod_health
from kdsim.kubelet.status import ContainerRun, pod_status

H, P, D, U = HealthStatus.HEALTHY, HealthStatus.PROGRESSING, HealthStatus.DEGRADED, HealthStatus.UNKNOWN


def pod(status: dict[str, Any], *, restart_policy: str = "Always", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kdss-x-0", "namespace": "default", **meta},
        "spec": {"restartPolicy": restart_policy, "containers": [{"name": "app", "image": "i"}]},
        "status": status,
    }


def rendered(
    *, phase: str = "Running", init: list[ContainerRun] | None = None, main: list[ContainerRun] | None = None, **kw: Any
) -> dict[str, Any]:
    return pod_status(
        phase=phase,
        init=init or [],
        main=main or [],
        pod_ip="10.0.0.2",
        host_ip="10.0.0.1",
        start_time="2024-01-01T00:00:00Z",
        previous=None,
        **kw,
    )


def app(state: str = "running", ready: bool = False) -> ContainerRun:
    run = ContainerRun("app", "example/app:1", "example/app@sha256:1")
    if state == "running":
        run.run()
        run.ready = ready
    return run


def crashlooping() -> ContainerRun:
    run = app()
    run.terminate(1, "simulated crash")
    run.restart_waiting("CrashLoopBackOff", "back-off restarting failed container=app")
    return run


def failed_init() -> ContainerRun:
    run = ContainerRun("init", "example/app:1", "example/app@sha256:1")
    run.run()
    run.terminate(2, "cp: cannot stat '/etc'")
    return run


def image_pull_backoff() -> ContainerRun:
    run = app(state="waiting")
    run.reason, run.message = "ImagePullBackOff", 'Back-off pulling image "example/app:9"'
    return run


def restarted_not_ready() -> ContainerRun:
    run = crashlooping()
    run.run()
    return run


@pytest.mark.parametrize(
    "obj, status, fragments",
    [
        (pod(rendered(main=[app(ready=True)])), H, []),
        (pod(rendered(main=[app(ready=False)])), P, ["ContainersNotReady", "containers with unready status: [app]"]),
        (
            pod(rendered(main=[crashlooping()])),
            D,
            ["CrashLoopBackOff", "container app", "back-off restarting failed container=app"],
        ),
        (pod(rendered(phase="Pending", main=[image_pull_backoff()])), D, ["ImagePullBackOff", 'pulling image "example/app:9"']),
        (
            pod(rendered(init=[failed_init()], main=[app(state="waiting")])),
            D,
            ["Init:Error", "container init", "exit code 2", "cannot stat"],
        ),
        (pod(rendered(main=[restarted_not_ready()])), D, ["container app restarted 1 times, last exit code 1"]),
        (pod(rendered(phase="Pending", main=[app(state="waiting")])), P, ["ContainerCreating", "container app"]),
        (pod(rendered(phase="Succeeded", main=[app()])), H, []),
        (pod(rendered(phase="Failed", main=[app()], message="Pod was evicted", reason="Evicted")), D, ["Pod was evicted"]),
        (pod(rendered(main=[crashlooping()]), restart_policy="Never"), P, []),
        (pod(rendered(main=[app()]), deletionTimestamp="2024-01-01T00:00:00Z"), P, ["Pending deletion"]),
        (pod(rendered(phase="Weird", main=[app()])), U, ["phase Weird"]),
    ],
)
def test_rules(obj: dict[str, Any], status: HealthStatus, fragments: list[str]) -> None:
    health = pod_health(obj)
    assert health.status is status, health
    for fragment in fragments:
        assert fragment in health.message, health
    assert health_of(obj) == health


def test_init_crashloop_is_reported_as_init_reason() -> None:
    init = failed_init()
    init.restart_waiting("CrashLoopBackOff", "back-off restarting failed container init")
    health = pod_health(pod(rendered(phase="Pending", init=[init], main=[app(state="waiting")])))
    assert health.status is D and health.message.startswith("Init:CrashLoopBackOff: container init")


def test_failed_pod_without_message_names_the_exit_code() -> None:
    run = app()
    run.terminate(137)
    health = pod_health(pod(rendered(phase="Failed", main=[run])))
    assert health == pod_health(pod(rendered(phase="Failed", main=[run])))
    assert health.status is D and health.message == "container 'app' failed with exit code 137"


def test_new_pod_without_status_is_progressing() -> None:
    assert pod_health({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}).status is P
