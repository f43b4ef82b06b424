"""The images' programs really work, run unpacked without containers (chroot, own PID and network namespaces):
hello answers its version on the port its KDApp declares (and only there), reads and writes its persisted
directories, refuses to start without its data, and exits 0 within a second of SIGTERM as PID 1; the hook, gate
and migration commands the example KDApp declares give the exit codes and file effects the upgrade relies on;
KubeDirector's init container and postStart hook run on the image; the sandbox program waits until SIGTERM."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.render.init_script import ENV_DIRS, ENV_VERSION, INIT_SCRIPT, dirs_env
from gitops_kd.spec.upgrade import DISCARD, KEEP, MIGRATE
from gitops_kd.testing import wait_for
from tests.nodeimages import unpacked
from tests.nodeimages.facts import HELLO_PORTS_ENV, HELLO_PROGRAM, PAUSE_REF, TEMPLATE, hello

pytestmark = pytest.mark.backends
Rootfs = Callable[[str], Path]
STOP_WITHIN = 1.0  # seconds from SIGTERM to exit: a pod of these images is replaced without the 30 s grace period


def started(root: Path, env: dict[str, str] | None = None) -> unpacked.Running:
    return unpacked.start(root, [HELLO_PROGRAM], env)


@pytest.mark.parametrize("version", ["1.0.0", "2.0.0"])
def test_hello_serves_its_version_on_its_kdapp_port_reads_writes_its_data_and_stops_on_sigterm(
    rootfs: Rootfs, version: str
) -> None:
    image = hello(version)
    other = hello("2.0.0" if version == "1.0.0" else "1.0.0")
    root = rootfs(image.ref)
    running = started(root)
    try:
        (port,) = image.role_ports["worker"]
        wait_for(f"hello {version} answering on {port}", lambda: running.get(port) is not None, 10)
        assert running.get(port) == f"hello {version}\n"
        # only its own port: a Service still aimed at the other version's port reaches nothing
        assert other.ports != image.ports and all(running.get(p) is None for p in other.ports)
        data = running.get(port, "/cgi-bin/data")
        assert data is not None and data.splitlines()[:2] == [f"hello {version}", f"data: data-{version}"], data
        assert running.get(port, "/cgi-bin/note?seen-by-" + version) == "noted\n"
        assert (root / "var/lib/hello/notes").read_text() == f"seen-by-{version}\n"
        assert (root / "opt/hello/cache/started-by").read_text() == f"{version}\n"
        code, took = running.terminate(timeout=10)
        assert code == 0 and took < STOP_WITHIN, (code, took)
    finally:
        running.stop()


def test_hello_listens_where_its_environment_says(rootfs: Rootfs) -> None:
    """HELLO_PORTS overrides the KDApp's ports (a KDCluster role's env can set it, as a test of another app may)."""
    running = started(rootfs(hello("2.0.0").ref), {HELLO_PORTS_ENV: "9000 9001"})
    try:
        for port in (9000, 9001):
            wait_for(f"hello answering on {port}", functools.partial(running.get, port), 10)
            assert running.get(port) == "hello 2.0.0\n"
        assert running.get(8081) is None
    finally:
        running.stop()


def test_hello_refuses_to_start_without_its_persisted_data(rootfs: Rootfs) -> None:
    root = rootfs(hello("1.0.0").ref)
    (root / "var/lib/hello/data").unlink()
    done = unpacked.run(root, [HELLO_PROGRAM], timeout=10)
    assert done.returncode == 1 and "persisted data is missing" in done.stderr, done


def upgrade_stanza() -> dict[str, Any]:
    app = yaml.safe_load((TEMPLATE / "examples/hello-2.0.0.yaml").read_text(encoding="utf-8"))
    return dict(app["spec"]["upgrade"])


def test_the_examples_hook_gate_and_migration_commands_on_the_2_0_0_image(rootfs: Rootfs) -> None:
    """The commands examples/hello-2.0.0.yaml declares, run in the 2.0.0 image with the layout gitops-kd makes for
    `migrate` (the 1.0.0 copy set aside under /var/lib/gitops-kd/old/<dir>): the gate fails until the hook ran,
    the migration merges the old data and records schema 2, and fails (halting the rollout) without the old copy."""
    stanza = upgrade_stanza()
    migrate = stanza["from"][0]["persistDirs"]["/var/lib/hello"]["migrate"]["command"]
    hook, gate = stanza["hooks"]["postUpgrade"]["command"], stanza["gate"]["exec"]["command"]
    root = rootfs(hello("2.0.0").ref)
    missing = unpacked.run(root, migrate)
    assert missing.returncode != 0, "a migration without the old copy must fail"
    old = root / "var/lib/gitops-kd/old/var/lib/hello"
    old.mkdir(parents=True)
    (old / "data").write_text("data-1.0.0\n")
    (old / "user.txt").write_text("written-at-1.0.0\n")
    assert unpacked.run(root, gate).returncode != 0  # before the hook: the gate holds the next member
    done = unpacked.run(root, migrate)
    assert done.returncode == 0, done
    lib = root / "var/lib/hello"
    assert (lib / "user.txt").read_text() == "written-at-1.0.0\n"
    assert (lib / "schema-version").read_text() == "2\n"
    assert (lib / "new-in-2").read_text() == "yes\n"  # the 2.0.0 copy's own file stays
    assert unpacked.run(root, hook).returncode == 0
    assert (lib / "upgrade.log").read_text() == "upgraded-to-2.0.0\n"
    assert unpacked.run(root, gate).returncode == 0


def kubedirector_init(persist_dirs: list[str]) -> str:
    """KubeDirector's init container script (pkg/executor/statefulset.go generateInitContainerLaunch, f404588) for
    ``persist_dirs``: rsync when it has the options, else `cp --parent -ax`; then the marker /etc/kubedirector.init."""
    dirs = " ".join(persist_dirs)
    rsync = (
        "mkdir -p /mnt/etc; rsync --log-file=/mnt/etc/kubedirector-init.log --info=progress2 --relative -ax "
        f"--no-inc-recursive {dirs} /mnt > /mnt/etc/kubedirector-init-progress-bar.log;"
    )
    return (
        "rsync --log-file=./rsync-check-status-dummy.log --info=progress2 --relative -ax --no-inc-recursive --version; "
        "RSYNC_CHECK_STATUS=$?; ! [ -f /mnt/etc/kubedirector.init ] && ( [ ${RSYNC_CHECK_STATUS} != 0 ] && "
        f"(cp --parent -ax {dirs} /mnt) || ({rsync})); touch /mnt/etc/kubedirector.init;"
    )


def kubedirector_post_start(cluster_service: str) -> str:
    """KubeDirector's postStart hook (getStartupScript, f404588): the cluster's headless Service first in resolv.conf."""
    return (
        "exec 2>>/tmp/kd-postcluster.log; set -x;Retries=60; while [[ $Retries && ! -s /etc/resolv.conf ]]; do "
        "sleep 1; Retries=$(expr $Retries - 1); done; "
        f'sed "s/^search \\([^ ]\\+\\)/search {cluster_service}.\\1 \\1/" /etc/resolv.conf > /tmp/resolv.conf.new && '
        "cat /tmp/resolv.conf.new > /etc/resolv.conf;rm -f /tmp/resolv.conf.new;chmod 755 /run;exit 0"
    )


@pytest.mark.parametrize("version", ["1.0.0", "2.0.0"])
def test_kubedirectors_init_container_and_post_start_hook_run_on_hello(rootfs: Rootfs, version: str) -> None:
    """Without /bin/bash the pod never starts; with busybox's cp alone (no --parents) the init script still exits
    0 (its last command is `touch`) but copies nothing, and the app starts without its persisted data."""
    image = hello(version)
    root = rootfs(image.ref)
    (root / "mnt").mkdir(exist_ok=True)
    done = unpacked.run(root, ["/bin/bash", "-c", kubedirector_init(["/etc", *image.persist_dirs])])
    assert done.returncode == 0, done
    for path, content in image.files.items():
        if path.startswith(("/etc/", *(d + "/" for d in image.persist_dirs))):
            assert (root / "mnt" / path.lstrip("/")).read_text() == content, path
    assert (root / "mnt/etc/kubedirector.init").is_file() and (root / "mnt/etc/passwd").is_file()
    (root / "etc/resolv.conf").write_text("search ns1.svc.cluster.local svc.cluster.local\nnameserver 10.0.0.10\n")
    done = unpacked.run(root, ["/bin/bash", "-c", kubedirector_post_start("kdhs-abc")])
    assert done.returncode == 0, done
    assert (root / "etc/resolv.conf").read_text().splitlines()[0] == (
        "search kdhs-abc.ns1.svc.cluster.local ns1.svc.cluster.local svc.cluster.local"
    )


def test_the_sandbox_program_waits_until_sigterm(rootfs: Rootfs) -> None:
    root = rootfs(PAUSE_REF)
    running = unpacked.start(root, ["/pause"], loopback=False)
    try:
        assert running.proc.poll() is None  # exec'd as PID 1 and still there
        code, took = running.terminate(timeout=10)
        assert code == 0 and took < STOP_WITHIN, (code, took)
    finally:
        running.stop()


def test_gitops_kds_init_script_seeds_and_upgrades_the_data_on_the_images(rootfs: Rootfs) -> None:
    """The init container gitops-kd renders in place of KubeDirector's (`/bin/sh -c INIT_SCRIPT`, PVC at /mnt) runs
    on the images: a first start on 1.0.0 seeds the persisted dirs; the same PVC started on 2.0.0 under the example's
    rules keeps /etc, sets the 1.0.0 /var/lib/hello aside for the migration and installs 2.0.0's, discards the
    cache. Busybox's find (no -writable) and tar (no --null) seed nothing, and busybox's ash runs them before
    anything on PATH: the images carry GNU find and tar, and /bin/sh is bash."""
    first, second = rootfs(hello("1.0.0").ref), rootfs(hello("2.0.0").ref)
    dirs = ["/etc", *hello("1.0.0").persist_dirs]
    seeded = unpacked.run(
        first,
        ["/bin/sh", "-c", INIT_SCRIPT],
        env={ENV_VERSION: "1.0.0", ENV_DIRS: dirs_env((d, KEEP) for d in dirs)},
    )
    assert seeded.returncode == 0, seeded.stderr
    pvc = first / "mnt"
    assert (pvc / "var/lib/hello/data").read_text() == "data-1.0.0\n" and (pvc / "etc/kubedirector.init").is_file()
    (pvc / "var/lib/hello/user.txt").write_text("written-at-1.0.0\n")
    (second / "mnt").rmdir()
    pvc.rename(second / "mnt")  # the member's PVC, now mounted by its 2.0.0 pod
    rules = upgrade_stanza()["from"][0]["persistDirs"]
    actions = {d: (MIGRATE if isinstance(rules.get(d), dict) else rules.get(d, KEEP)) for d in dirs}
    assert actions == {"/etc": KEEP, "/var/lib/hello": MIGRATE, "/opt/hello/cache": DISCARD}
    upgraded = unpacked.run(
        second, ["/bin/sh", "-c", INIT_SCRIPT], env={ENV_VERSION: "2.0.0", ENV_DIRS: dirs_env(actions.items())}
    )
    assert upgraded.returncode == 0, upgraded.stderr
    pvc = second / "mnt"
    assert (pvc / "etc/hello/version").read_text() == "1.0.0\n"  # keep
    assert (pvc / "var/lib/hello/new-in-2").read_text() == "yes\n"  # migrate: the new copy installed ...
    assert (pvc / ".gitops-kd/old/var/lib/hello/user.txt").read_text() == "written-at-1.0.0\n"  # ... the old aside
    assert (pvc / "opt/hello/cache/index").read_text() == "cache-2.0.0\n"  # discard
    assert (pvc / ".gitops-kd/version").read_text() == "2.0.0\n"
