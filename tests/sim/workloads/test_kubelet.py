"""The simulated kubelet: volumes that outlive pods, real init containers, readiness, failure knobs."""

from __future__ import annotations

from kubernetes import client
from kubernetes.stream import stream
from workloads_util import delete_pod, kubectl, pods_by_name, statefulset, sts_ready, wait_for

from kdsim.cluster import EmbeddedCluster
from kdsim.images import ImageBehavior, store_for


def _exec(core: client.CoreV1Api, namespace: str, pod: str, command: list[str]) -> str:
    return stream(
        core.connect_get_namespaced_pod_exec,
        pod,
        namespace,
        command=command,
        container="app",
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
    )


def _pod(core: client.CoreV1Api, namespace: str, name: str) -> client.V1Pod | None:
    try:
        return core.read_namespaced_pod(name, namespace)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def test_file_on_pvc_survives_pod_deletion(
    cluster: EmbeddedCluster, apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    body = statefulset(
        "keep", replicas=1, claims=True, container={"volumeMounts": [{"name": "data", "mountPath": "/var/lib/keep"}]}
    )
    apps.create_namespaced_stateful_set(namespace, body)
    wait_for(sts_ready(apps, namespace, "keep", 1))
    _exec(core, namespace, "keep-0", ["sh", "-c", "echo precious > /var/lib/keep/note; echo scratch > /tmp/s"])
    old_uid = core.read_namespaced_pod("keep-0", namespace).metadata.uid
    assert (cluster.state_dir / "volumes" / namespace / "data-keep-0" / "note").read_text() == "precious\n"
    delete_pod(core, namespace, "keep-0")
    wait_for(
        lambda: (p := _pod(core, namespace, "keep-0")) is not None and p.metadata.uid != old_uid and p.status.phase == "Running",
        what="keep-0 recreated",
    )
    wait_for(sts_ready(apps, namespace, "keep", 1))
    out = _exec(core, namespace, "keep-0", ["sh", "-c", "cat /var/lib/keep/note; ls /tmp"])
    assert out == "precious\n"  # the PVC kept the note; the container's own /tmp is fresh
    assert not (cluster.state_dir / "kubelet" / "pods" / old_uid).exists()


def test_init_container_copies_into_the_volume(
    cluster: EmbeddedCluster, apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    store_for(cluster).add("example.com/app:7", {"/etc/app/app.conf": "threads=4\n"})
    init = [
        {
            "name": "copy",
            "image": "example.com/app:7",
            "env": [{"name": "MARK", "value": "done-$(HOSTNAME)"}],
            "command": ["sh", "-c", "cp -a /etc /mnt/ && echo $MARK > /mnt/etc/kubedirector.init"],
            "volumeMounts": [{"name": "data", "mountPath": "/mnt"}],
        }
    ]
    body = statefulset(
        "kd",
        replicas=1,
        claims=True,
        image="example.com/app:7",
        init=init,
        container={"volumeMounts": [{"name": "data", "mountPath": "/etc", "subPath": "etc"}]},
    )
    apps.create_namespaced_stateful_set(namespace, body)
    wait_for(sts_ready(apps, namespace, "kd", 1))
    pvc_dir = cluster.state_dir / "volumes" / namespace / "data-kd-0"
    assert (pvc_dir / "etc" / "app" / "app.conf").read_text() == "threads=4\n"
    assert (pvc_dir / "etc" / "kubedirector.init").read_text() == "done-kd-0\n"
    # the app container sees the persisted copy through its subPath mount
    assert _exec(core, namespace, "kd-0", ["cat", "/etc/kubedirector.init", "/etc/app/app.conf"]) == "done-kd-0\nthreads=4\n"
    logs = kubectl(cluster, "-n", namespace, "logs", "kd-0", "-c", "copy")
    assert logs.returncode == 0 and logs.stdout == "", logs.stderr
    pod = core.read_namespaced_pod("kd-0", namespace)
    init_status = pod.status.init_container_statuses[0]
    assert init_status.state.terminated.exit_code == 0 and init_status.state.terminated.reason == "Completed"
    conditions = {c.type: c.status for c in pod.status.conditions}
    assert conditions["Initialized"] == conditions["Ready"] == conditions["ContainersReady"] == "True"
    assert pod.status.host_ip and pod.status.start_time and pod.status.container_statuses[0].started


def test_failing_init_container_backs_off(
    cluster: EmbeddedCluster, apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    init = [{"name": "boom", "image": "busybox:1", "command": ["sh", "-c", "echo nope >&2; exit 3"]}]
    apps.create_namespaced_stateful_set(namespace, statefulset("bad", replicas=1, init=init))

    def restarted() -> client.V1Pod | None:
        pod = _pod(core, namespace, "bad-0")
        statuses = (pod.status.init_container_statuses or []) if pod else []
        return pod if statuses and statuses[0].restart_count >= 1 else None

    pod = wait_for(restarted, what="init container restarted")
    status = pod.status.init_container_statuses[0]
    assert status.last_state.terminated.exit_code == 3
    assert pod.status.phase == "Pending"
    assert kubectl(cluster, "-n", namespace, "logs", "bad-0", "-c", "boom").stdout.startswith("nope\n")
    listing = kubectl(cluster, "-n", namespace, "get", "pod", "bad-0", "--no-headers")
    assert "Init:CrashLoopBackOff" in listing.stdout or "Init:Error" in listing.stdout, listing.stdout
    assert apps.read_namespaced_stateful_set("bad", namespace).status.ready_replicas in (None, 0)


def test_never_ready_image(cluster: EmbeddedCluster, apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str) -> None:
    store_for(cluster).add("example.com/stuck:1", {}, behavior=ImageBehavior(never_ready=True))
    apps.create_namespaced_stateful_set(namespace, statefulset("stuck", replicas=2, image="example.com/stuck:1"))
    pod = wait_for(lambda: (p := _pod(core, namespace, "stuck-0")) and p.status.phase == "Running" and p, what="stuck-0 running")
    assert not pod.status.container_statuses[0].ready
    assert next(c for c in pod.status.conditions if c.type == "Ready").status == "False"
    # OrderedReady never gets past the unready pod
    assert sorted(pods_by_name(core, namespace, "stuck")) == ["stuck-0"]
    rollout = kubectl(cluster, "-n", namespace, "rollout", "status", "statefulset/stuck", "--timeout=1s")
    assert rollout.returncode != 0 and "Waiting for 2 pods to be ready..." in rollout.stdout


def test_crash_looping_image(cluster: EmbeddedCluster, apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str) -> None:
    store_for(cluster).add("example.com/crash:1", {}, behavior=ImageBehavior(crash_loop=True))
    apps.create_namespaced_stateful_set(namespace, statefulset("crash", replicas=1, image="example.com/crash:1"))

    def looping() -> client.V1Pod | None:
        pod = _pod(core, namespace, "crash-0")
        cs = (pod.status.container_statuses or [None])[0] if pod and pod.status else None
        return pod if cs and cs.restart_count >= 1 and cs.state.waiting else None

    pod = wait_for(looping, what="crash loop")
    cs = pod.status.container_statuses[0]
    assert cs.state.waiting.reason == "CrashLoopBackOff" and not cs.ready
    assert cs.last_state.terminated.exit_code == 1 and cs.last_state.terminated.reason == "Error"


def test_exec_readiness_probe_gates_ready(
    cluster: EmbeddedCluster, apps: client.AppsV1Api, core: client.CoreV1Api, namespace: str
) -> None:
    probe = {"exec": {"command": ["test", "-f", "/tmp/ready"]}, "periodSeconds": 1}
    apps.create_namespaced_stateful_set(namespace, statefulset("probe", replicas=1, container={"readinessProbe": probe}))
    wait_for(lambda: (p := _pod(core, namespace, "probe-0")) and p.status.phase == "Running", what="running")
    pod = core.read_namespaced_pod("probe-0", namespace)
    assert not pod.status.container_statuses[0].ready
    _exec(core, namespace, "probe-0", ["touch", "/tmp/ready"])
    wait_for(sts_ready(apps, namespace, "probe", 1), timeout=10, what="probe passes")


def test_pods_resume_after_a_cluster_restart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    init = [
        {
            "name": "count",
            "image": "busybox:1",
            "command": ["sh", "-c", "echo run >> /mnt/runs"],
            "volumeMounts": [{"name": "data", "mountPath": "/mnt"}],
        }
    ]
    with EmbeddedCluster(tmp_path) as first:
        apps = client.AppsV1Api(first.api_client())
        apps.create_namespaced_stateful_set("default", statefulset("pers", replicas=1, claims=True, init=init))
        wait_for(sts_ready(apps, "default", "pers", 1))
        before = client.CoreV1Api(first.api_client()).read_namespaced_pod("pers-0", "default")
    with EmbeddedCluster(tmp_path) as second:
        core = client.CoreV1Api(second.api_client())

        def exec_works() -> bool:
            try:
                return _exec(core, "default", "pers-0", ["cat", "/etc/image-ref"]) == "example.com/web:1\n"
            except client.ApiException:  # the kubelet has not resumed the pod yet
                return False

        wait_for(exec_works, what="exec after restart")
        after = core.read_namespaced_pod("pers-0", "default")
        assert after.metadata.uid == before.metadata.uid
        assert after.status.pod_ip == before.status.pod_ip and after.status.container_statuses[0].ready
    assert (tmp_path / "volumes" / "default" / "data-pers-0" / "runs").read_text() == "run\n"
