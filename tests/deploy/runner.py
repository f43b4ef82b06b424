"""`gitops-kd run` as a real process for tests: its own bearer token (its identity in the access log), its
log file, its HTTP endpoints on an ephemeral port."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from gitops_kd.testing import wait_for
from kdsim.cluster import EmbeddedCluster

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


class RunProcess:
    """One `gitops-kd run` process; `url` is its HTTP endpoint once it serves."""

    def __init__(self, name: str, workdir: Path, kubeconfig: Path, repo: str, *extra: str,
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / f"{name}.log"
        self._log = self.log_path.open("wb")
        args = [sys.executable, "-c", "from gitops_kd.cli import main; main()", "run", "--repo", repo,
                "--kubeconfig", str(kubeconfig),
                "--cache-dir", str(workdir / f"{name}-cache"), "--listen", "127.0.0.1:0", "--interval", "0.5",
                *extra]
        full_env = {**os.environ, "POD_NAME": name, **(env or {})}
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, env=full_env)

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
        if self.alive:
            self.proc.kill()
        self.proc.wait(10)

    def stop(self, timeout: float = 60) -> int:
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode

