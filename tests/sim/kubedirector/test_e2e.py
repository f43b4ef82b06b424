"""End to end: the simulated KubeDirector in an EmbeddedCluster with the StatefulSet controller and kubelet."""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.testing import pod_ready, wait_for
from kdsim.kubedirector import names
from kubeplumb.names import POD_NAME_LABEL
from kubeplumb.rest import RestClient

cluster_module = pytest.importorskip("kdsim.cluster", reason="kdsim.cluster (apiserver-core) missing")

KD = names.API_VERSION
NS = "default"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with cluster_module.EmbeddedCluster(tmp_path_factory.mktemp("kd-e2e"), controllers=True) as c:
        yield c


@pytest.fixture(scope="module")
def rest(cluster: Any, shared_apps: dict[str, dict[str, Any]]) -> RestClient:
    client = RestClient(cluster.api_client())
    for app in shared_apps.values():
        client.create(KD, names.KDAPP_PLURAL, NS, copy.deepcopy(app))
    return client


def kdcluster(rest: RestClient, name: str) -> dict[str, Any] | None:
    return rest.get_or_none(KD, names.KDCLUSTER_PLURAL, NS, name)


def wait_configured(rest: RestClient, name: str, members: int | None = None, timeout: float = 120.0) -> dict:
    def probe() -> dict | None:
        obj = kdcluster(rest, name)
        status = (obj or {}).get("status") or {}
        got = sum(len(r.get("members") or []) for r in status.get("roles") or [])
        if status.get("state") == "configured" and (members is None or got == members):
            return obj
        return None

    return wait_for(f"KDCluster {name} configured", probe, timeout)


def centos(name: str, members: int = 1, storage: bool = False) -> dict[str, Any]:
    role: dict[str, Any] = {"id": "vanilla_centos", "members": members, "resources": {"limits": {"memory": "1Gi", "cpu": "1"}}}
    if storage:
        role["storage"] = {"size": "1Gi"}
    return {
        "apiVersion": KD,
        "kind": "KubeDirectorCluster",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"app": "centos7x", "roles": [role]},
    }


def role_sts(rest: RestClient, obj: dict[str, Any], role: str) -> dict[str, Any]:
    rs = next(r for r in obj["status"]["roles"] if r["id"] == role)
    return rest.get("apps/v1", "statefulsets", NS, rs["statefulSet"])


def check_cluster(rest: RestClient, obj: dict[str, Any]) -> None:
    """Everything KD would have made for `obj` exists, is labelled like KD's and its pods are Ready."""
    name, status, spec = obj["metadata"]["name"], obj["status"], obj["spec"]
    assert names.FINALIZER in obj["metadata"]["finalizers"]
    headless = rest.get("v1", "services", NS, status["clusterService"])
    assert status["clusterService"].startswith("kdhs-") and headless["spec"]["clusterIP"] == "None"
    wanted = {r["id"]: r for r in spec["roles"] if r.get("members", 1)}
    assert {r["id"] for r in status["roles"]} == set(wanted)
    for rs in status["roles"]:
        sts = rest.get("apps/v1", "statefulsets", NS, rs["statefulSet"])
        assert rs["statefulSet"].startswith("kdss-")
        assert sts["metadata"]["labels"][names.CLUSTER_LABEL] == name
        assert sts["metadata"]["labels"][names.ROLE_LABEL] == rs["id"]
        assert sts["metadata"]["ownerReferences"][0]["uid"] == obj["metadata"]["uid"]
        assert sts["spec"]["serviceName"] == status["clusterService"]
        assert sts["spec"]["updateStrategy"]["type"] == "RollingUpdate"  # defaulted by the API server
        assert sts["spec"]["replicas"] == len(rs["members"])
        has_storage = "storage" in wanted[rs["id"]]
        for i, m in enumerate(rs["members"]):
            assert m["pod"] == f"{rs['statefulSet']}-{i}" and m["state"] == "configured"
            assert pod_ready(rest.get("v1", "pods", NS, m["pod"])), m["pod"]
            if m["service"] != "n/a":
                svc = rest.get("v1", "services", NS, m["service"])
                assert svc["spec"]["selector"] == {POD_NAME_LABEL: m["pod"]}
            if has_storage:
                assert rest.get("v1", "persistentvolumeclaims", NS, m["pvc"])
            else:
                assert "pvc" not in m


def needs_systemd(app: dict[str, Any]) -> bool:
    """KubeDirector waits for systemd before a role's configure: systemdRequired and a config package."""
    spec = app["spec"]
    packaged = spec.get("defaultConfigPackage") or any(r.get("configPackage") for r in spec.get("roles") or ())
    return bool(spec.get("systemdRequired") and packaged)


def test_every_shared_example_cluster_comes_up(
    rest: RestClient, shared_clusters: dict[str, dict], shared_apps: dict[str, dict[str, Any]]
) -> None:
    """Each example cluster comes up configured, except those whose app needs systemd: no container of the
    simulated node runs it, so KubeDirector (the real one on this node too, issue 42) keeps them creating, every
    pod running, with its Event `systemd not yet responsive in member{<pod>}`."""
    for doc in shared_clusters.values():
        body = copy.deepcopy(doc)
        body["metadata"].pop("uid", None)
        rest.create(KD, names.KDCLUSTER_PLURAL, NS, body)
    waiting = {n for n, doc in shared_clusters.items() if needs_systemd(shared_apps[doc["spec"]["app"]])}
    assert waiting and waiting != set(shared_clusters), waiting  # both kinds are in the examples
    for name in sorted(set(shared_clusters) - waiting):
        check_cluster(rest, wait_configured(rest, name, timeout=180))
    for name in sorted(waiting):

        def creating(n: str = name) -> dict[str, Any] | None:
            obj = kdcluster(rest, n) or {}
            members = [m for r in (obj.get("status") or {}).get("roles") or () for m in r.get("members") or ()]
            return obj if members and all(m["state"] == "creating" for m in members) else None

        obj = wait_for(f"{name}'s members creating", creating, 180)
        assert obj["status"]["state"] == "creating", obj["status"]
        pod = obj["status"]["roles"][0]["members"][0]["pod"]
        wait_for(
            f"{name}: systemd not yet responsive",
            lambda n=name, p=pod: any(
                e["message"] == f"systemd not yet responsive in member{{{p}}}"
                for e in rest.list("v1", "events", NS)["items"]
                if e["involvedObject"].get("name") == n
            ),
            60,
        )
    for name in shared_clusters:  # free the pods for the other tests
        rest.delete(KD, names.KDCLUSTER_PLURAL, NS, name)
    for name in shared_clusters:
        wait_for(f"{name} deleted", lambda n=name: kdcluster(rest, n) is None)


def test_scale_members_up_and_down(rest: RestClient) -> None:
    rest.create(KD, names.KDCLUSTER_PLURAL, NS, centos("scaling"))
    obj = wait_configured(rest, "scaling", 1)
    sts_name = obj["status"]["roles"][0]["statefulSet"]
    patch = {"spec": {"roles": [{**centos("scaling")["spec"]["roles"][0], "members": 2}]}}
    rest.patch(KD, names.KDCLUSTER_PLURAL, NS, "scaling", patch)
    obj = wait_configured(rest, "scaling", 2)
    check_cluster(rest, obj)
    assert [m["nodeID"] for m in obj["status"]["roles"][0]["members"]] == [1, 2]
    second = obj["status"]["roles"][0]["members"][1]
    patch["spec"]["roles"][0]["members"] = 1
    rest.patch(KD, names.KDCLUSTER_PLURAL, NS, "scaling", patch)
    obj = wait_configured(rest, "scaling", 1)
    assert rest.get("apps/v1", "statefulsets", NS, sts_name)["spec"]["replicas"] == 1
    wait_for("removed member's pod gone", lambda: rest.get_or_none("v1", "pods", NS, second["pod"]) is None)
    assert rest.get_or_none("v1", "services", NS, second["service"]) is None
    rest.delete(KD, names.KDCLUSTER_PLURAL, NS, "scaling")


def test_statefulset_template_and_service_port_edits_are_not_reverted(rest: RestClient) -> None:
    rest.create(KD, names.KDCLUSTER_PLURAL, NS, centos("edited"))
    obj = wait_configured(rest, "edited", 1)
    sts = role_sts(rest, obj, "vanilla_centos")
    name = sts["metadata"]["name"]
    rest.patch(
        "apps/v1",
        "statefulsets",
        NS,
        name,
        [
            {"op": "replace", "path": "/spec/updateStrategy", "value": {"type": "OnDelete"}},
            {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "docker.io/bluedata/centos7:9.9"},
        ],
        patch_type="json",
    )
    member_svc = obj["status"]["roles"][0]["members"][0]["service"]
    rest.patch("v1", "services", NS, member_svc, {"spec": {"ports": [{"name": "generic-ssh", "port": 2222}]}})
    # Make KD do real work afterwards: scale up, which patches replicas and adds a member and its service.
    role = {**centos("edited")["spec"]["roles"][0], "members": 2}
    rest.patch(KD, names.KDCLUSTER_PLURAL, NS, "edited", {"spec": {"roles": [role]}})
    obj = wait_configured(rest, "edited", 2, timeout=60)
    sts = rest.get("apps/v1", "statefulsets", NS, name)
    assert sts["spec"]["replicas"] == 2
    assert sts["spec"]["updateStrategy"]["type"] == "OnDelete"
    assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == "docker.io/bluedata/centos7:9.9"
    assert [p["port"] for p in rest.get("v1", "services", NS, member_svc)["spec"]["ports"]] == [2222]
    new_svc = rest.get("v1", "services", NS, obj["status"]["roles"][0]["members"][1]["service"])
    assert [p["port"] for p in new_svc["spec"]["ports"]] == [22]
    rest.delete(KD, names.KDCLUSTER_PLURAL, NS, "edited")


def test_deleting_the_kdcluster_cleans_up(rest: RestClient) -> None:
    rest.create(KD, names.KDCLUSTER_PLURAL, NS, centos("doomed", storage=True))
    obj = wait_configured(rest, "doomed", 1)
    sts_name = obj["status"]["roles"][0]["statefulSet"]
    pod = obj["status"]["roles"][0]["members"][0]["pod"]
    rest.delete(KD, names.KDCLUSTER_PLURAL, NS, "doomed")
    wait_for("KDCluster gone (finalizer removed)", lambda: kdcluster(rest, "doomed") is None)
    selector = f"{names.CLUSTER_LABEL}=doomed"
    for api, plural in (("apps/v1", "statefulsets"), ("v1", "services"), ("v1", "pods")):
        wait_for(
            f"{plural} of doomed collected", lambda a=api, p=plural: not rest.list(a, p, NS, label_selector=selector)["items"]
        )
    assert rest.get_or_none("apps/v1", "statefulsets", NS, sts_name) is None
    assert rest.get_or_none("v1", "pods", NS, pod) is None


def kubectl(cluster: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig), *args], capture_output=True, text=True, timeout=60)


def exec_in(cluster: Any, pod: str, *command: str) -> subprocess.CompletedProcess[str]:
    """`kubectl exec` into the app container (nested mounts: /run/lock lies inside the /run volume)."""
    return kubectl(cluster, "exec", pod, "-c", "app", "--", *command)


def delete_pod_and_wait(rest: RestClient, pod: str) -> None:
    old_uid = rest.get("v1", "pods", NS, pod)["metadata"]["uid"]
    rest.delete("v1", "pods", NS, pod)
    wait_for(
        "member pod re-created and Ready",
        lambda: (p := rest.get_or_none("v1", "pods", NS, pod)) is not None and p["metadata"]["uid"] != old_uid and pod_ready(p),
    )


def test_pvc_is_seeded_once_and_survives_pod_deletion(cluster: Any, rest: RestClient) -> None:
    rest.create(KD, names.KDCLUSTER_PLURAL, NS, centos("seeded", storage=True))
    obj = wait_configured(rest, "seeded", 1)
    member = obj["status"]["roles"][0]["members"][0]
    data = Path(cluster.state_dir) / "volumes" / NS / member["pvc"]  # the kubelet's PVC directory
    assert (data / "etc" / "kubedirector.init").is_file()
    assert "centos7:4.1" in (data / "etc" / "image-ref").read_text()
    (data / "etc" / "image-ref").write_text("changed on the volume\n")
    (data / "home" / "user-file").write_text("precious\n")
    delete_pod_and_wait(rest, member["pod"])  # Ready: its init container has run again
    wait_configured(rest, "seeded", 1)
    # The marker stopped the init container from seeding again: the volume's copy wins over the image's.
    assert (data / "etc" / "image-ref").read_text() == "changed on the volume\n"
    assert (data / "home" / "user-file").read_text() == "precious\n"
    rest.delete(KD, names.KDCLUSTER_PLURAL, NS, "seeded")


def test_file_in_persisted_dir_survives_pod_deletion_via_exec(cluster: Any, rest: RestClient) -> None:
    rest.create(KD, names.KDCLUSTER_PLURAL, NS, centos("keeper", storage=True))
    obj = wait_configured(rest, "keeper", 1)
    pod = obj["status"]["roles"][0]["members"][0]["pod"]
    try:
        seeded = exec_in(cluster, pod, "cat", "/etc/image-ref")
        assert seeded.returncode == 0 and "centos7:4.1" in seeded.stdout, seeded.stderr
        written = exec_in(cluster, pod, "sh", "-c", "echo precious > /home/data.txt")
        assert written.returncode == 0, written.stderr
        delete_pod_and_wait(rest, pod)
        wait_configured(rest, "keeper", 1)
        read = exec_in(cluster, pod, "cat", "/home/data.txt")
        assert read.returncode == 0 and read.stdout.strip() == "precious", read.stderr
    finally:
        rest.delete(KD, names.KDCLUSTER_PLURAL, NS, "keeper")


def test_cluster_waits_for_its_app_then_comes_up(rest: RestClient, shared_apps: dict[str, dict]) -> None:
    body = centos("late")
    body["spec"]["app"] = "centos-late"
    rest.create(KD, names.KDCLUSTER_PLURAL, NS, body)
    obj = wait_for(
        "KDCluster late seen by KubeDirector",
        lambda: (
            (o := kdcluster(rest, "late"))
            and names.FINALIZER in o["metadata"].get("finalizers", [])
            and (o.get("status") or {}).get("state") == "creating"
            and o
        ),
    )
    assert obj["status"]["roles"] == []
    assert not rest.list("apps/v1", "statefulsets", NS, label_selector=f"{names.CLUSTER_LABEL}=late")["items"]
    app = copy.deepcopy(shared_apps["centos7x"])
    app["metadata"]["name"] = "centos-late"
    rest.create(KD, names.KDAPP_PLURAL, NS, app)
    check_cluster(rest, wait_configured(rest, "late", 1, timeout=60))
    rest.delete(KD, names.KDCLUSTER_PLURAL, NS, "late")
