"""The data-handling init script, run for real with /bin/sh against temp dirs standing for /mnt and the image."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from gitops_kd.render.init_script import INIT_SCRIPT, dirs_env

V1_IMAGE = {
    "etc/os-release": "image 1\n",
    "etc/hello/hello.conf": "conf 1\n",
    "var/lib/hello/data": "seed 1\n",
    "opt/hello/cache/c": "cache 1\n",
    "usr/bin/not-persisted": "x\n",
}
V2_IMAGE = {
    "etc/os-release": "image 2\n",
    "etc/hello/hello.conf": "conf 2\n",
    "var/lib/hello/data": "seed 2\n",
    "var/lib/hello/schema": "2\n",
    "opt/hello/cache/c2": "cache 2\n",
    "srv/new/readme": "new in 2\n",
}
V1_DIRS = (("/etc", "keep"), ("/var/lib/hello", "keep"), ("/opt/hello/cache", "keep"))
UP_DIRS = (("/etc", "keep"), ("/var/lib/hello", "migrate"), ("/opt/hello/cache", "discard"), ("/srv/new", "keep"))
DOWN_DIRS = (("/etc", "keep"), ("/var/lib/hello", "restore"), ("/opt/hello/cache", "discard"))


def make_tree(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def snapshot(root: Path) -> dict[str, str]:
    """rel path -> content ("<dir>" for directories), for every entry below root."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = "<dir>"
        for f in filenames:
            out[os.path.relpath(os.path.join(dirpath, f), root)] = Path(dirpath, f).read_text()
    return out


def run(
    mnt: Path,
    image: Path,
    version: str,
    dirs,
    from_version: str = "",
    *,
    shell: tuple[str, ...] = ("/bin/sh", "-c"),
    prefix: str = "",
    crash_env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GITOPS_KD_ROOT": str(image),
        "GITOPS_KD_MNT": str(mnt),
        "GITOPS_KD_VERSION": version,
        "GITOPS_KD_FROM_VERSION": from_version,
        "GITOPS_KD_DIRS": dirs_env(dirs),
        **(crash_env or {}),
    }
    return subprocess.run([*shell, prefix + INIT_SCRIPT], env=env, capture_output=True, text=True, timeout=30)


def ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def images(tmp_path: Path) -> tuple[Path, Path]:
    return make_tree(tmp_path / "img1", V1_IMAGE), make_tree(tmp_path / "img2", V2_IMAGE)


def seeded(tmp_path: Path, img1: Path) -> Path:
    """A PVC after a first start at 1.0.0, then written to by the app."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    ok(run(mnt, img1, "1.0.0", V1_DIRS))
    (mnt / "var/lib/hello/data").write_text("user data 1\n")
    (mnt / "etc/hello/hello.conf").write_text("edited conf\n")
    (mnt / "opt/hello/cache/c").write_text("stale cache\n")
    return mnt


def test_first_start_copies_persisted_dirs_like_kubedirector(tmp_path: Path, images) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    ok(run(mnt, images[0], "1.0.0", V1_DIRS))
    snap = snapshot(mnt)
    assert snap["etc/hello/hello.conf"] == "conf 1\n"
    assert snap["var/lib/hello/data"] == "seed 1\n"
    assert snap["opt/hello/cache/c"] == "cache 1\n"
    assert "etc/kubedirector.init" in snap
    assert snap[".gitops-kd/version"] == "1.0.0\n"
    assert "usr" not in snap  # only persisted dirs are copied


def test_marker_present_without_version_is_adopted_at_from_version(tmp_path: Path, images) -> None:
    """A PVC KubeDirector seeded (marker, no data version) is taken to hold GITOPS_KD_FROM_VERSION."""
    mnt = seeded(tmp_path, images[0])
    (mnt / ".gitops-kd/version").unlink()
    ok(run(mnt, images[1], "2.0.0", UP_DIRS, from_version="1.0.0"))
    assert (mnt / ".gitops-kd/old/var/lib/hello/data").read_text() == "user data 1\n"
    assert (mnt / ".gitops-kd/version").read_text() == "2.0.0\n"


def test_upgrade_keep_discard_migrate_and_new_dir(tmp_path: Path, images) -> None:
    mnt = seeded(tmp_path, images[0])
    proc = run(mnt, images[1], "2.0.0", UP_DIRS, from_version="1.0.0")
    ok(proc)
    snap = snapshot(mnt)
    # keep: the PVC copy stays as it is (the image's new conf is not seen)
    assert snap["etc/hello/hello.conf"] == "edited conf\n"
    assert snap["etc/os-release"] == "image 1\n"
    # discard: replaced by the 2.0.0 image's copy
    assert "opt/hello/cache/c" not in snap and snap["opt/hello/cache/c2"] == "cache 2\n"
    # migrate: the image's copy installed, the old copy set aside for the migrate command
    assert snap["var/lib/hello/data"] == "seed 2\n" and snap["var/lib/hello/schema"] == "2\n"
    assert snap[".gitops-kd/old/var/lib/hello/data"] == "user data 1\n"
    # a dir new in this version is seeded from the image
    assert snap["srv/new/readme"] == "new in 2\n"
    assert snap[".gitops-kd/version"] == "2.0.0\n"
    assert not any(k.startswith(".gitops-kd/work/") for k in snap)
    # the discarded copy is not kept anywhere
    assert "stale cache\n" not in snap.values()


def test_rerun_at_same_version_changes_nothing(tmp_path: Path, images) -> None:
    mnt = seeded(tmp_path, images[0])
    ok(run(mnt, images[1], "2.0.0", UP_DIRS, from_version="1.0.0"))
    (mnt / "var/lib/hello/data").write_text("migrated\n")
    before = snapshot(mnt)
    ok(run(mnt, images[1], "2.0.0", UP_DIRS, from_version="1.0.0"))
    assert snapshot(mnt) == before


def test_downgrade_restores_the_kept_copy(tmp_path: Path, images) -> None:
    mnt = seeded(tmp_path, images[0])
    ok(run(mnt, images[1], "2.0.0", UP_DIRS, from_version="1.0.0"))
    (mnt / "var/lib/hello/data").write_text("written by 2.0.0\n")
    ok(run(mnt, images[0], "1.0.0", DOWN_DIRS, from_version="2.0.0"))
    snap = snapshot(mnt)
    assert snap["var/lib/hello/data"] == "user data 1\n"  # the copy the upgrade set aside
    assert snap[".gitops-kd/old/var/lib/hello/data"] == "written by 2.0.0\n"  # one old generation: the 2.0 copy
    assert snap["opt/hello/cache/c"] == "cache 1\n" and "opt/hello/cache/c2" not in snap
    assert snap[".gitops-kd/version"] == "1.0.0\n"


def test_repeated_up_down_cycles_set_aside_each_attempts_data_and_hide_none(tmp_path: Path, images) -> None:
    """Invariant: any number of upgrade/downgrade attempts each set aside the data they replace exactly once:
    after every upgrade the old copy is the data 1.0.0 wrote last (not an earlier attempt's), after every
    downgrade the live data is that copy again and the 2.0.0 data is the one old generation; no attempt's work
    dir survives it, so the next attempt to the same version starts afresh."""
    mnt = seeded(tmp_path, images[0])
    for cycle in range(1, 4):
        v1_data = f"user data, cycle {cycle}\n"
        (mnt / "var/lib/hello/data").write_text(v1_data)
        ok(run(mnt, images[1], "2.0.0", UP_DIRS, from_version="1.0.0"))
        snap = snapshot(mnt)
        assert snap[".gitops-kd/old/var/lib/hello/data"] == v1_data, cycle
        assert snap["var/lib/hello/data"] == "seed 2\n" and snap[".gitops-kd/version"] == "2.0.0\n", cycle
        v2_data = f"migrated by 2.0.0, cycle {cycle}\n"
        (mnt / "var/lib/hello/data").write_text(v2_data)  # what the migration and the app write
        ok(run(mnt, images[0], "1.0.0", DOWN_DIRS, from_version="2.0.0"))
        snap = snapshot(mnt)
        assert snap["var/lib/hello/data"] == v1_data, cycle
        assert snap[".gitops-kd/old/var/lib/hello/data"] == v2_data, cycle
        assert snap[".gitops-kd/version"] == "1.0.0\n", cycle
        assert not any(k.startswith(".gitops-kd/work") for k in snap), cycle
        assert sorted(v for v in snap.values() if v.startswith(("user data", "migrated"))) == sorted([v1_data, v2_data])


def test_restore_without_kept_copy_keeps_current(tmp_path: Path, images) -> None:
    mnt = seeded(tmp_path, images[0])
    ok(
        run(
            mnt,
            images[1],
            "2.0.0",
            (("/etc", "keep"), ("/var/lib/hello", "keep"), ("/opt/hello/cache", "keep")),
            from_version="1.0.0",
        )
    )
    proc = run(mnt, images[0], "1.0.0", DOWN_DIRS, from_version="2.0.0")
    ok(proc)
    assert (mnt / "var/lib/hello/data").read_text() == "user data 1\n"
    assert "no kept copy" in proc.stderr


def test_a_second_upgrade_discards_the_older_old_generation(tmp_path: Path, images) -> None:
    mnt = seeded(tmp_path, images[0])
    ok(run(mnt, images[1], "2.0.0", UP_DIRS, from_version="1.0.0"))
    ok(run(mnt, images[1], "3.0.0", (("/etc", "keep"), ("/var/lib/hello", "keep")), from_version="2.0.0"))
    assert not (mnt / ".gitops-kd/old/var").exists()


def test_unfinished_work_for_another_target_stops_without_touching_data(tmp_path: Path, images) -> None:
    mnt = seeded(tmp_path, images[0])
    (mnt / ".gitops-kd/work/2.0.0/prev").mkdir(parents=True)
    before = snapshot(mnt)
    proc = run(mnt, images[1], "3.0.0", UP_DIRS, from_version="1.0.0")
    assert proc.returncode == 1
    assert "unfinished data upgrade to 2.0.0" in proc.stderr
    assert snapshot(mnt) == before


def test_missing_version_env_fails(tmp_path: Path, images) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = run(mnt, images[0], "", V1_DIRS)
    assert proc.returncode == 1 and "GITOPS_KD_VERSION is not set" in proc.stderr


def test_dirs_env_validates() -> None:
    assert dirs_env([("/var/lib/x", "migrate"), ("/etc", "keep")]) == "keep=/etc migrate=/var/lib/x"
    with pytest.raises(ValueError, match="unknown action"):
        dirs_env([("/etc", "wipe")])
    with pytest.raises(ValueError, match="absolute path"):
        dirs_env([("/my dir", "keep")])


# --- crash at any command: bash's DEBUG trap kills the shell before the N-th top-level command ---------------
CRASH_PREFIX = 'n=0; trap \'n=$((n+1)); if [ "$n" -ge "$CRASH_AT" ]; then kill -9 $$; fi\' DEBUG\n'
COUNT_PREFIX = "trap 'echo x >> \"$COUNT_FILE\"' DEBUG\n"


def crash_points(total: int) -> list[int]:
    """Every command when GITOPS_KD_FULL_CRASH_TESTS is set, else about 30 spread over the run (fast suite)."""
    if os.environ.get("GITOPS_KD_FULL_CRASH_TESTS"):
        return list(range(1, total + 1))
    stride = max(1, total // 30)
    return sorted(set(range(1, total + 1, stride)) | {total - 2, total - 1, total})


def _count_commands(tmp_path: Path, prepare, version: str, dirs, from_version: str, image: Path) -> int:
    mnt = prepare(tmp_path / "count")
    counter = tmp_path / "count.txt"
    ok(
        run(
            mnt,
            image,
            version,
            dirs,
            from_version,
            shell=("bash", "-c"),
            prefix=COUNT_PREFIX,
            crash_env={"COUNT_FILE": str(counter)},
        )
    )
    return len(counter.read_text().splitlines())


def _crash_everywhere(tmp_path: Path, prepare, version: str, dirs, from_version: str, image: Path) -> None:
    reference = prepare(tmp_path / "ref")
    ok(run(reference, image, version, dirs, from_version))
    expected = snapshot(reference)
    total = _count_commands(tmp_path, prepare, version, dirs, from_version, image)
    assert total > 20
    template = prepare(tmp_path / "template")
    for crash_at in crash_points(total):
        mnt = tmp_path / f"crash{crash_at}"
        shutil.copytree(template, mnt, symlinks=True)
        proc = run(
            mnt,
            image,
            version,
            dirs,
            from_version,
            shell=("bash", "-c"),
            prefix=CRASH_PREFIX,
            crash_env={"CRASH_AT": str(crash_at)},
        )
        assert proc.returncode != 0, f"did not crash at command {crash_at}"
        ok(run(mnt, image, version, dirs, from_version))
        assert snapshot(mnt) == expected, f"crash before command {crash_at} of {total}"
        shutil.rmtree(mnt)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for the DEBUG trap")
def test_crash_anywhere_during_upgrade_reaches_the_same_end_state(tmp_path: Path, images) -> None:
    def prepare(base: Path) -> Path:
        base.mkdir()
        return seeded(base, images[0])

    _crash_everywhere(tmp_path, prepare, "2.0.0", UP_DIRS, "1.0.0", images[1])


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for the DEBUG trap")
def test_crash_anywhere_during_downgrade_reaches_the_same_end_state(tmp_path: Path, images) -> None:
    def prepare(base: Path) -> Path:
        base.mkdir()
        mnt = seeded(base, images[0])
        ok(run(mnt, images[1], "2.0.0", UP_DIRS, from_version="1.0.0"))
        (mnt / "var/lib/hello/data").write_text("written by 2.0.0\n")
        return mnt

    _crash_everywhere(tmp_path, prepare, "1.0.0", DOWN_DIRS, "2.0.0", images[0])


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for the DEBUG trap")
def test_crash_anywhere_during_first_start_reaches_the_same_end_state(tmp_path: Path, images) -> None:
    def prepare(base: Path) -> Path:
        (base / "mnt").mkdir(parents=True)
        return base / "mnt"

    _crash_everywhere(tmp_path, prepare, "1.0.0", V1_DIRS, "", images[0])
