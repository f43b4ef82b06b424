"""Every command that reads the cluster spells its cluster flags as kubectl does (-n, -A, --kubeconfig with help)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gitops_kd.cli import main

NAMESPACED = ("status", "history", "plan", "diff", "suspend", "resume", "run")


@pytest.mark.parametrize("command", [*NAMESPACED, "sync"])
def test_cluster_flags_are_spelled_the_same_everywhere(command: str) -> None:
    done = CliRunner().invoke(main, [command, "--help"])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    kubeconfig = next(line for line in lines if line.strip().startswith("--kubeconfig FILE"))
    assert "Kubeconfig file (default: $KUBECONFIG" in kubeconfig, done.output
    assert any(line.strip().startswith("--context TEXT") and "Kubeconfig context" in line for line in lines)
    assert any(line.strip().startswith("-n, --namespace TEXT") for line in lines), done.output
    if command in NAMESPACED:
        assert any(line.strip().startswith("-A, --all-namespaces") for line in lines), done.output
