"""Pure parts of the node: StatefulSet plan and revisions, images, exec framing, the chroot runner."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kdsim.controllers import revisions as rev
from kdsim.controllers.statefulset_plan import new_pod, ordinal_of, plan
from kdsim.exec import protocol
from kdsim.images import ImageRef, ImageStore
from kdsim.kubelet import runner


def _sts(replicas: int = 3, image: str = "img:1", **spec: object) -> dict:
    return {
        "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 2},
        "spec": {
            "replicas": replicas,
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": image}]}},
            **spec,
        },
    }


def _ready(pod: dict) -> dict:
    pod = json.loads(json.dumps(pod))
    pod["metadata"]["uid"] = pod["metadata"]["name"]
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return pod


def test_revision_name_hash_and_equality() -> None:
    a, b = rev.build_revision(_sts(), 1, 0), rev.build_revision(_sts(image="img:2"), 2, 0)
    assert a["metadata"]["name"] == "web-" + a["metadata"]["labels"][rev.HASH_LABEL]
    assert a["metadata"]["name"] != b["metadata"]["name"]
    assert rev.build_revision(_sts(), 5, 0)["metadata"]["name"] == a["metadata"]["name"]  # number not hashed
    assert rev.build_revision(_sts(), 1, 1)["metadata"]["name"] != a["metadata"]["name"]  # collisionCount is
    assert set(rev.revision_hash(a["data"], 0)) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert rev.equal_revisions([a, b], rev.build_revision(_sts(), 9, 0)) == [a]
    assert rev.template_of(a)["spec"]["containers"][0]["image"] == "img:1"


def test_prune_keeps_live_and_newest_history() -> None:
    revs = [{"metadata": {"name": f"r{i}"}, "revision": i} for i in range(1, 6)]
    pods = [{"metadata": {"labels": {rev.POD_REVISION_LABEL: "r1"}}}]
    assert rev.revisions_to_prune(revs, pods, current="r4", update="r5", history_limit=1) == ["r2"]
    assert rev.revisions_to_prune(revs, pods, current="r4", update="r5", history_limit=0) == ["r2", "r3"]


def test_ordinal_of() -> None:
    assert ordinal_of("web", "web-12") == 12
    assert ordinal_of("web", "web-x") is None and ordinal_of("web", "webby-1") is None


def test_ordered_ready_waits_and_parallel_does_not() -> None:
    sts = _sts()
    r1 = rev.build_revision(sts, 1, 0)
    first = plan(sts, [], set(), r1, r1, 0)
    assert [(a.verb, a.obj["metadata"]["name"]) for a in first.actions] == [("create_pod", "web-0")]
    pending = new_pod(sts, r1, 0) | {"status": {"phase": "Pending"}}
    assert plan(sts, [pending], set(), r1, r1, 0).actions == ()
    parallel = _sts(podManagementPolicy="Parallel")
    names = [a.obj["metadata"]["name"] for a in plan(parallel, [], set(), r1, r1, 0).actions]
    assert names == ["web-0", "web-1", "web-2"]


def test_claims_created_before_their_pod() -> None:
    sts = _sts(replicas=1, volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": {}}])
    r1 = rev.build_revision(sts, 1, 0)
    actions = plan(sts, [], set(), r1, r1, 0).actions
    assert [(a.verb, a.obj["metadata"]["name"]) for a in actions] == [("create_pvc", "data-web-0"), ("create_pod", "web-0")]
    assert plan(sts, [], {"data-web-0"}, r1, r1, 0).actions[0].verb == "create_pod"


def test_rolling_update_with_partition_one_step_at_a_time() -> None:
    old = _sts(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}})
    r1 = rev.build_revision(old, 1, 0)
    new = _sts(image="img:2", updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}})
    r2 = rev.build_revision(new, 2, 0)
    pods = [_ready(new_pod(old, r1, i)) for i in range(3)]
    step = plan(new, pods, set(), r1, r2, 0)
    assert [(a.verb, a.obj["metadata"]["name"]) for a in step.actions] == [("delete_pod", "web-2")]
    assert step.status["updateRevision"] == r2["metadata"]["name"]
    pods[2] = _ready(new_pod(new, r2, 2))
    assert [a.obj["metadata"]["name"] for a in plan(new, pods, set(), r1, r2, 0).actions] == ["web-1"]
    pods[1] = _ready(new_pod(new, r2, 1))
    done = plan(new, pods, set(), r1, r2, 0)
    assert done.actions == ()  # ordinal 0 is below the partition
    assert (done.status["updatedReplicas"], done.status["currentReplicas"]) == (2, 1)
    assert done.status["currentRevision"] == r1["metadata"]["name"]


def test_on_delete_recreates_at_update_revision_only() -> None:
    new = _sts(image="img:2", updateStrategy={"type": "OnDelete"})
    r1, r2 = rev.build_revision(_sts(), 1, 0), rev.build_revision(new, 2, 0)
    pods = [_ready(new_pod(_sts(), r1, i)) for i in range(3)]
    assert plan(new, pods, set(), r1, r2, 0).actions == ()
    recreate = plan(new, [pods[0], pods[2]], set(), r1, r2, 0).actions
    assert recreate[0].obj["metadata"]["labels"]["controller-revision-hash"] == r2["metadata"]["name"]
    assert recreate[0].obj["spec"]["containers"][0]["image"] == "img:2"


def test_scale_down_highest_first_and_status() -> None:
    sts = _sts(replicas=1)
    r1 = rev.build_revision(sts, 1, 0)
    pods = [_ready(new_pod(sts, r1, i)) for i in range(3)]
    step = plan(sts, pods, set(), r1, r1, 0)
    assert [(a.verb, a.obj["metadata"]["name"]) for a in step.actions] == [("delete_pod", "web-2")]
    assert step.status == {
        "observedGeneration": 2,
        "replicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "currentReplicas": 3,
        "updatedReplicas": 3,
        "currentRevision": r1["metadata"]["name"],
        "updateRevision": r1["metadata"]["name"],
        "collisionCount": 0,
    }


def test_image_store(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    root = store.rootfs("registry.local:5000/team/spark:3.5.1")
    assert (root / "etc/spark/version").read_text() == "3.5.1\n"
    assert (root / "etc/image-ref").read_text() == "registry.local:5000/team/spark:3.5.1\n"
    store.add("app:2", {"/opt/run.sh": "#!/bin/sh\necho run\n", "/etc/os-release": "ID=custom\n"})
    root = store.rootfs("app:2")
    assert (root / "etc/os-release").read_text() == "ID=custom\n" and (root / "opt/run.sh").stat().st_mode & 0o111
    assert ImageRef.parse("registry.local:5000/x") == ImageRef("registry.local:5000/x", "latest")
    with pytest.raises(ValueError, match="must be absolute"):
        store.add("bad:1", {"relative/path": "x"})


def test_exec_framing() -> None:
    assert protocol.encode(protocol.V4, protocol.STDOUT, b"hi") == b"\x01hi"
    assert protocol.encode(protocol.BASE64, protocol.STDERR, b"hi") == "2aGk="
    assert protocol.decode(protocol.V5, b"\xff\x00") == protocol.Frame(255, b"\x00")
    assert protocol.decode(protocol.V4, "\x00text") == protocol.Frame(0, b"text")
    status = protocol.exit_status(["sh", "-c", "exit 2"], 2)
    assert status["message"] == (
        "command terminated with non-zero exit code: error executing command [sh -c exit 2], exit code 2"
    )
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "2"}]
    assert protocol.error_payload(protocol.V1, status).startswith(b"command terminated")


def test_runner_merges_image_files_under_usr_with_host_tools(tmp_path: Path) -> None:
    image = tmp_path / "image"
    (image / "usr/lib/spark/conf").mkdir(parents=True)
    (image / "usr/lib/spark/conf/spark.conf").write_text("image\n")
    (tmp_path / "pvc/conf").mkdir(parents=True)
    (tmp_path / "pvc/conf/spark.conf").write_text("persisted\n")
    shutil.copytree(image, tmp_path / "rootfs", symlinks=True)
    proc = runner.ContainerProcess(
        rootfs=tmp_path / "rootfs",
        image_root=image,
        env={"PATH": "/usr/bin:/bin"},
        argv=(
            "sh",
            "-c",
            "cat /usr/lib/spark/conf/spark.conf /usr/lib/spark/conf2/spark.conf; touch /usr/bin/x 2>/dev/null || echo ro",
        ),
        mounts=(runner.Mount(tmp_path / "pvc/conf", "/usr/lib/spark/conf2"),),
    )
    result = runner.run(proc, timeout=30)
    if not runner.isolation_available():
        pytest.skip("mount namespaces not permitted here")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == b"image\npersisted\nro\n"


def test_runner_timeout_ends_the_commands_children_too(tmp_path: Path) -> None:
    """A timed-out command's background children die with it, as a container's processes do."""
    (tmp_path / "rootfs").mkdir()
    marker = "31.4159"
    proc = runner.ContainerProcess(
        rootfs=tmp_path / "rootfs", env={"PATH": "/usr/bin:/bin"}, argv=("sh", "-c", f"sleep {marker} & sleep {marker}; wait")
    )
    result = runner.run(proc, timeout=0.5)
    assert result.timed_out and result.exit_code == 137
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
    assert left.stdout.strip() == "", f"children still running: {left.stdout}"
