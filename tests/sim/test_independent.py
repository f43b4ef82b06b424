"""kdsim stands alone: every module imports, and a cluster serves, with gitops_kd made unimportable."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import importlib, pkgutil, sys
sys.modules["gitops_kd"] = None  # any import of gitops_kd now fails
import kdsim
for mod in pkgutil.walk_packages(kdsim.__path__, "kdsim."):
    importlib.import_module(mod.name)
import kubernetes.client
from kdsim.cluster import EmbeddedCluster
with EmbeddedCluster(controllers=True) as cluster:
    names = [n.metadata.name for n in kubernetes.client.CoreV1Api(cluster.api_client()).list_namespace().items]
    kinds = [c.spec.names.kind for c in
             kubernetes.client.ApiextensionsV1Api(cluster.api_client()).list_custom_resource_definition().items]
print(sorted(names), sorted(kinds))
"""


def test_kdsim_runs_without_gitops_kd() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "'default'" in out.stdout
    assert "['KubeDirectorApp', 'KubeDirectorCluster']" in out.stdout  # KubeDirector's CRDs, nothing of gitops-kd
