"""Run a command as a real subprocess "inside a container": private mount namespace, binds, chroot, env.

The host's /bin, /usr, /lib, /lib64, /sbin are bind-mounted read-only into the container's rootfs so
that its commands (sh, cat, cp, rsync, ...) work; where the image itself has files under those dirs
(e.g. /usr/lib/spark/conf), the host tree is merged in entry by entry and the image's files win.
Volume mounts are bound on top. If mount namespaces are not permitted, commands run un-isolated with
cwd=<rootfs>/<workingDir> (a warning is logged once; paths inside the command are then host paths).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

SYSTEM_DIRS = ("/bin", "/usr", "/lib", "/lib64", "/sbin")
DEVICES = ("null", "zero", "random", "urandom", "full", "tty")
_NSEXEC = str(Path(__file__).with_name("nsexec.py"))


@dataclass(frozen=True)
class Mount:
    """A host path (dir or file) bound at `path` inside the container."""

    source: Path
    path: str
    read_only: bool = False


@dataclass(frozen=True)
class ContainerProcess:
    """Everything needed to start one process in a container."""

    rootfs: Path
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str = "/"
    mounts: tuple[Mount, ...] = ()
    hostname: str = ""
    image_root: Path | None = None  # the pristine image tree, to tell image files from mountpoints


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False


class RunnerError(Exception):
    """The container process could not be set up (bad mount path, ...)."""


@functools.lru_cache(maxsize=1)
def isolation_available() -> bool:
    """True when this process may create mount namespaces, bind-mount and chroot (checked once)."""
    with tempfile.TemporaryDirectory(prefix="sim-probe-") as tmp:
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps({"rootfs": tmp, "binds": [], "argv": ["/bin/true"], "env": {}}))
        probe = subprocess.run([sys.executable, "-I", "-S", _NSEXEC, str(spec_path)], capture_output=True, timeout=30)
    ok = probe.returncode in (0, 127)  # 127: chroot worked, /bin/true is absent there
    if not ok:
        log.warning(
            "mount namespaces unavailable (%s); container commands will run un-isolated with cwd=<rootfs>",
            probe.stderr.decode(errors="replace").strip(),
        )
    return ok


def _inside(rootfs: Path, path: str) -> Path:
    target = rootfs / path.lstrip("/")
    real_root = os.path.realpath(rootfs)
    real = os.path.realpath(target)
    if real != real_root and not real.startswith(real_root + os.sep):
        raise RunnerError(f"mount path {path!r} escapes the container root {rootfs}")
    return target


class _Plan:
    def __init__(self, proc: ContainerProcess) -> None:
        self.proc = proc
        self.rootfs = proc.rootfs
        self.binds: list[list[object]] = []
        self.keep: set[str] = {"/"}
        for m in proc.mounts:
            parts = Path(m.path).parts
            for i in range(1, len(parts) + 1):
                self.keep.add(str(Path(*parts[:i])))

    def image_has(self, cpath: str) -> bool:
        if cpath in self.keep:
            return True
        if self.proc.image_root is None:
            return False  # without the pristine image, host system dirs are bound whole
        return os.path.lexists(self.proc.image_root / cpath.lstrip("/"))

    def merge(self, host: str, cpath: str) -> None:
        dst = self.rootfs / cpath.lstrip("/")
        if not self.image_has(cpath):
            dst.mkdir(parents=True, exist_ok=True)
            self.binds.append([host, str(dst), True])
            return
        if dst.is_symlink() or not dst.is_dir():
            return  # the image has a file or link here: it wins
        for entry in os.scandir(host):
            child = f"{cpath.rstrip('/')}/{entry.name}"
            target = self.rootfs / child.lstrip("/")
            if entry.is_symlink():
                if not self.image_has(child) and not os.path.lexists(target):
                    os.symlink(os.readlink(entry.path), target)
            elif entry.is_dir():
                self.merge(entry.path, child)
            elif not self.image_has(child):
                if not os.path.lexists(target):
                    target.touch()
                self.binds.append([entry.path, str(target), True])

    def build(self) -> dict[str, object]:
        self.rootfs.mkdir(parents=True, exist_ok=True)
        for d in SYSTEM_DIRS:
            if os.path.islink(d):
                link = self.rootfs / d.lstrip("/")
                if not self.image_has(d) and not os.path.lexists(link):
                    os.symlink(os.readlink(d), link)
            elif os.path.isdir(d):
                self.merge(d, d)
        dev = self.rootfs / "dev"
        dev.mkdir(exist_ok=True)
        for name in DEVICES:
            if os.path.exists(f"/dev/{name}"):
                (dev / name).touch(exist_ok=True)
                self.binds.append([f"/dev/{name}", str(dev / name), False])
        (self.rootfs / "proc").mkdir(exist_ok=True)
        for m in self.proc.mounts:
            target = _inside(self.rootfs, m.path)
            if Path(m.source).is_dir():
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch(exist_ok=True)
            _inside(self.rootfs, m.path)
            self.binds.append([str(m.source), str(target), m.read_only])
        return {
            "rootfs": str(self.rootfs),
            "binds": self.binds,
            "proc": True,
            "hostname": self.proc.hostname,
            "workdir": self.proc.workdir or "/",
            "env": dict(self.proc.env),
            "argv": list(self.proc.argv),
        }


def command_line(proc: ContainerProcess) -> tuple[list[str], str | None, dict[str, str] | None]:
    """(argv, cwd, env) for the host subprocess that runs `proc` (creates mountpoints in the rootfs)."""
    if not proc.argv:
        raise RunnerError("no command given")
    if isolation_available():
        spec = _Plan(proc).build()
        fd, spec_path = tempfile.mkstemp(prefix=".nsexec-", suffix=".json", dir=proc.rootfs.parent)
        with os.fdopen(fd, "w") as fh:
            json.dump(spec, fh)
        return [sys.executable, "-I", "-S", _NSEXEC, spec_path], None, {}
    cwd = proc.rootfs / (proc.workdir or "/").lstrip("/")
    cwd.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **proc.env}
    return list(proc.argv), str(cwd), env


def kill_group(pid: int) -> None:
    """SIGKILL the whole process group led by ``pid`` (the command and everything it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def run(proc: ContainerProcess, *, stdin: bytes | None = None, timeout: float = 60.0) -> RunResult:
    """Run to completion; capture stdout, stderr and the exit code (137 and timed_out on timeout).

    The command runs in its own process group, so a timeout ends its children too, as a container's
    processes all end with it.
    """
    argv, cwd, env = command_line(proc)
    try:
        child = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            start_new_session=True,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except FileNotFoundError as exc:
        return RunResult(127, b"", f"exec: {exc}\n".encode())
    try:
        out, err = child.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(child.pid)
        out, err = child.communicate()
        return RunResult(137, out or b"", err or b"", timed_out=True)
    return RunResult(child.returncode, out, err)


async def spawn(proc: ContainerProcess, *, stdin: bool) -> asyncio.subprocess.Process:
    """Start the process, in its own process group, with piped stdout/stderr (and stdin if asked)."""
    argv, cwd, env = command_line(proc)
    return await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )


def exit_code_of(returncode: int) -> int:
    """Shell-style exit code: 128+N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode
