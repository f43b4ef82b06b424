"""`gitops-kd sim serve` in the foreground: kubectl works against it, Ctrl-C stops it, `sim fault` injects."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from gitops_kd.cli import main


def test_serve_until_interrupted(tmp_path: Path) -> None:
    copy = tmp_path / "kc" / "config"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from gitops_kd.cli import main; main()",
            "sim",
            "serve",
            "--state-dir",
            str(tmp_path / "state"),
            "--no-controllers",
            "--kubeconfig",
            str(copy),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url_line = proc.stdout.readline()
        kc_line = proc.stdout.readline()
        assert url_line.startswith("API server: https://127.0.0.1:"), url_line + (proc.stderr.read() if proc.poll() else "")
        assert kc_line.strip() == f"kubeconfig: {copy}"
        out = subprocess.run(
            ["kubectl", "--kubeconfig", str(copy), "get", "ns", "-o", "name"], capture_output=True, text=True, timeout=60
        )
        assert "namespace/default" in out.stdout.split(), out.stderr
        result = CliRunner().invoke(
            main, ["sim", "fault", "--kubeconfig", str(copy), "--verb", "get", "--resource", "namespaces"]
        )
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["verb"] == "get"
        failed = subprocess.run(
            ["kubectl", "--kubeconfig", str(copy), "get", "ns", "default"], capture_output=True, text=True, timeout=60
        )
        assert failed.returncode != 0 and "injected fault" in failed.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    assert proc.returncode == 0
    assert (tmp_path / "state" / "store.json").is_file()
    assert oct(os.stat(copy).st_mode & 0o777) == "0o600"


def test_serve_refuses_a_corrupt_state(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "store.json").write_text("{not json", encoding="utf-8")
    result = CliRunner().invoke(main, ["sim", "serve", "--state-dir", str(state), "--no-controllers"])
    assert result.exit_code == 2
    assert f"{state / 'store.json'}: not a saved cluster state" in result.output
