"""At run time too, the pure core imports no I/O edge (.importlinter checks the import statements)."""

from __future__ import annotations

import subprocess
import sys

CORE = (
    "gitops_kd.spec",
    "gitops_kd.steps",
    "kubeplumb.structural",
    "gitops_kd.kd",
    "gitops_kd.diff",
    "gitops_kd.plan",
    "gitops_kd.health",
    "gitops_kd.render",
    "gitops_kd.drift",
    "gitops_kd.observed",
    "gitops_kd.constants",
    "gitops_kd.review",
)
EDGES = (
    "git",
    "kubernetes",
    "aiohttp",
    "apscheduler",
    "prometheus_client",
    "urllib3",
    "urllib.request",
    "http.client",
    "ssl",
    "socket",
    "subprocess",
    "kdsim",
    "gitops_kd.source",
    "gitops_kd.kube",
    "kubeplumb.rest",
    "kubeplumb.informer",
    "kubeplumb.workqueue",
    "gitops_kd.observe.collector",
    "gitops_kd.controller.drift_watcher",
    "gitops_kd.controller",
    "gitops_kd.execute",
    "gitops_kd.status",
    "gitops_kd.cli",
    "gitops_kd.server",
    "gitops_kd.history",
)


def test_core_imports_no_edge() -> None:
    probe = (
        "import importlib, sys\n"
        f"for m in {CORE!r}: importlib.import_module(m)\n"
        f"edges = {EDGES!r}\n"
        "print(sorted(m for m in sys.modules if m in edges or m.startswith(tuple(e + '.' for e in edges))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"the core pulls in edge modules: {out.strip()}"
