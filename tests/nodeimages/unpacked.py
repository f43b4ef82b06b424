"""Run an image's programs without containers: its archive's layer unpacked into a folder, commands chrooted into it,
long-running ones as PID 1 of fresh PID and network namespaces (loopback up), reached with the image's own busybox
through `nsenter`. Needs root (chroot, unshare). Nothing outlives `Running.stop()` (unshare --kill-child)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from gitops_kd.testing import wait_for

DEVICES = {"null": 3, "zero": 5, "full": 7, "random": 8, "urandom": 9}  # name -> minor of major 1


def unpack(archive: Path, into: Path) -> Path:
    """The image's root filesystem: the layer named by its manifest, extracted into ``into``."""
    with tarfile.open(archive) as outer:
        manifest = json.load(outer.extractfile("manifest.json"))  # type: ignore[arg-type]
        layer = outer.extractfile(manifest[0]["Layers"][0])
        assert layer is not None
        with tarfile.open(fileobj=layer) as inner:
            inner.extractall(into, filter="fully_trusted")
    (into / "dev").mkdir(exist_ok=True)
    for name, minor in DEVICES.items():  # what a container runtime puts in /dev (a shell's `&` opens /dev/null)
        os.mknod(into / "dev" / name, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    return into


def run(
    rootfs: Path, argv: list[str], timeout: float = 30, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` chrooted into ``rootfs`` (the image's PATH, plus ``env``) to completion, in fresh PID and
    network namespaces: nothing it starts binds this machine's ports or outlives it."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", **(env or {})}
    isolated = ["unshare", "--net", "--pid", "--fork", "--kill-child", "chroot", str(rootfs), *argv]
    return subprocess.run(isolated, capture_output=True, text=True, timeout=timeout, env=env)


@dataclass
class Running:
    """A program running as PID 1 of its own PID and network namespaces, chrooted into an image's rootfs."""

    rootfs: Path
    proc: subprocess.Popen[str]
    pid: int  # PID 1 of the new namespace, as this machine numbers it

    def get(self, port: int, path: str = "/") -> str | None:
        """The body of GET http://127.0.0.1:<port><path> inside the namespace, or None when it fails."""
        done = subprocess.run(
            ["nsenter", "-t", str(self.pid), "-n", str(self.rootfs / "bin/busybox"), "wget", "-q", "-O", "-",
             f"http://127.0.0.1:{port}{path}"],
            capture_output=True,
            text=True,
            timeout=10,
        )  # fmt: skip
        return done.stdout if done.returncode == 0 else None

    def terminate(self, timeout: float) -> tuple[int, float]:
        """SIGTERM to PID 1; (its exit code, seconds until it ended). Raises TimeoutExpired past ``timeout``."""
        started = time.monotonic()
        os.kill(self.pid, signal.SIGTERM)
        code = self.proc.wait(timeout=timeout)
        return code, time.monotonic() - started

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # unshare --kill-child: PID 1 and so the whole namespace go with it
            self.proc.wait(10)


def _child_of(pid: int) -> int | None:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def start(rootfs: Path, argv: list[str], env: dict[str, str] | None = None, *, loopback: bool = True) -> Running:
    """Start ``argv`` as PID 1 of new PID and network namespaces; with ``loopback``, exec'd by the image's shell
    once it brought loopback up (an image without a shell or `ip`: loopback=False)."""
    environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", **(env or {})}
    setup = ["/bin/sh", "-c", 'ip link set lo up && exec "$@"', "sh"] if loopback else []
    proc = subprocess.Popen(
        ["unshare", "--net", "--pid", "--fork", "--kill-child", "chroot", str(rootfs), *setup, *argv],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    wait_for("the namespace's PID 1", lambda: _child_of(proc.pid) is not None or proc.poll() is not None, 10)
    pid = _child_of(proc.pid)
    if pid is None:
        out = proc.communicate(timeout=5)[0]
        raise AssertionError(f"{argv} ended at once ({proc.returncode}): {out}")
    wait_for(f"{argv[0]} exec'd as PID 1", lambda: _cmdline(pid).startswith(_exe_name(rootfs, argv[0])), 10)
    return Running(rootfs, proc, pid)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _exe_name(rootfs: Path, program: str) -> str:
    """What /proc/PID/cmdline starts with once ``program`` runs: `<interpreter> <program>` for a script."""
    head = (rootfs / program.lstrip("/")).read_bytes()[:128]
    if not head.startswith(b"#!"):
        return program
    interpreter = head[2:].split(b"\n", 1)[0].decode().strip()
    return f"{interpreter} {program}"
