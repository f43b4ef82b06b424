"""The Helm chart as the tests use it: the real helm (scripts/helm) rendering charts/gitops-kd."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "gitops-kd"
RELEASE_NS = "gitops-kd-system"


@functools.cache
def helm() -> str:
    """The helm binary (scripts/helm fetches it once; scripts/bootstrap already did in a test run)."""
    out = subprocess.run([str(ROOT / "scripts" / "helm")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"scripts/helm could not provide helm:\n{out.stderr}"
    return out.stdout.strip()


def run_helm(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([helm(), *args], capture_output=True, text=True, timeout=timeout)


def render(*sets: str, crds: bool = False) -> list[dict[str, Any]]:
    """`helm template gitops-kd charts/gitops-kd -n gitops-kd-system --set ...` as objects."""
    args = ["template", "gitops-kd", str(CHART), "-n", RELEASE_NS, *(a for s in sets for a in ("--set", s))]
    out = run_helm(*args, *(["--include-crds"] if crds else []))
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    [found] = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    return found


def values() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return loaded
