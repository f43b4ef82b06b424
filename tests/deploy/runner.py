"""`gitops-kd run` as a real process for tests: its own bearer token (its identity in the access log), its
log file, its HTTP endpoints on an ephemeral port."""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from gitops_kd.testing import wait_for
from kdsim.cluster import EmbeddedCluster
from tests.real.controlplane import die_with_parent

ROOT = Path(__file__).resolve().parents[2]
SERVING = re.compile(r"serving .* on (http://[0-9.:]+)")


def token_kubeconfig(cluster: EmbeddedCluster, path: Path, token: str) -> Path:
    """A copy of the cluster's kubeconfig whose user presents `token` (the embedded API server logs it as the user)."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def _cli_child(args: list[str], env: dict[str, str], log_path: str) -> None:
    """In a process forked from the preloaded fork server: `gitops-kd <args>` with its output in log_path (it dies
    with the fork server, which ends with the test process)."""
    die_with_parent()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.chdir(ROOT)
    os.environ.clear()
    os.environ.update(env)
    from gitops_kd.cli import main

    main(args=args, prog_name="gitops-kd")


class _Forked:
    """The subprocess.Popen surface RunProcess uses, over a multiprocessing.Process."""

    def __init__(self, process: Any) -> None:
        self.process = process
        self.pid: int = process.pid

    @property
    def returncode(self) -> int | None:
        code: int | None = self.process.exitcode
        return code

    def poll(self) -> int | None:
        return self.returncode

    def kill(self) -> None:
        self.process.kill()

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def wait(self, timeout: float | None = None) -> int:
        self.process.join(timeout)
        if self.process.exitcode is None:
            raise subprocess.TimeoutExpired("gitops-kd run", timeout or 0)
        code: int = self.process.exitcode
        return code


_PRELOADED: Any = None


def _preloaded() -> Any:
    """A fork server that imported gitops_kd.cli once: each process forked from it skips the imports (seconds)."""
    global _PRELOADED
    if _PRELOADED is None:
        _PRELOADED = multiprocessing.get_context("forkserver")
        # __main__ and this module too, so that a forked child has nothing left to import
        _PRELOADED.set_forkserver_preload(["__main__", __name__, "gitops_kd.cli"])
    return _PRELOADED


class RunProcess:
    """One `gitops-kd run` process; `url` is its HTTP endpoint once it serves.

    `preloaded`: fork it from a fork server that imported gitops_kd.cli once (still a process of its own, with its
    own pid, signals and exit status) instead of starting a new interpreter that imports everything again."""

    proc: subprocess.Popen[bytes] | _Forked

    def __init__(
        self,
        name: str,
        workdir: Path,
        kubeconfig: Path,
        repo: str,
        *extra: str,
        env: dict[str, str] | None = None,
        preloaded: bool = False,
    ) -> None:
        self.name = name
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / f"{name}.log"
        self.cpu = 0.0  # CPU seconds, as last seen by kill() or stop()
        self._log = self.log_path.open("wb")
        args = [
            "run",
            "--repo",
            repo,
            "--kubeconfig",
            str(kubeconfig),
            "--cache-dir",
            str(workdir / f"{name}-cache"),
            "--listen",
            "127.0.0.1:0",
            "--interval",
            "0.5",
            *extra,
        ]
        full_env = {**os.environ, "POD_NAME": name, **(env or {})}
        if preloaded:
            process = _preloaded().Process(
                target=_cli_child, args=(args, full_env, str(self.log_path)), name=f"gitops-kd run ({name})"
            )
            process.start()
            self.proc = _Forked(process)
        else:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from gitops_kd.cli import main; main()", *args],
                cwd=ROOT,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=full_env,
                preexec_fn=die_with_parent,
            )

    def cpu_seconds(self) -> float:
        """CPU seconds (user + system) the process used so far (Linux /proc; 0 once it was reaped)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def url(self, timeout: float = 60) -> str:
        def probe() -> str | None:
            if not self.alive:
                raise AssertionError(f"{self.name} exited {self.proc.returncode}:\n{self.log()[-3000:]}")
            m = SERVING.search(self.log())
            return m.group(1) if m else None

        return wait_for(f"{self.name} serving HTTP", probe, timeout, interval=0.1)

    def get(self, path: str, timeout: float = 5) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url() + path, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def poll_now(self) -> None:
        req = urllib.request.Request(self.url() + "/webhook", data=b"{}", method="POST")
        try:
            urllib.request.urlopen(req, timeout=5).close()
        except (urllib.error.URLError, OSError):
            pass  # the interval poll picks the commit up anyway

    def kill(self) -> None:
        """SIGKILL: no graceful stop, the Lease is not released."""
        self.cpu = self.cpu_seconds()
        if self.alive:
            self.proc.kill()
        self.proc.wait(10)

    def stop(self, timeout: float = 60) -> int:
        self.cpu = max(self.cpu, self.cpu_seconds())
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode
