"""The real node (tests/real/realnode.py) on its own: Ready, a pod Running with its IP on the node's bridge,
`kubectl exec` and `kubectl logs` through the API server to the kubelet, a claim of the default StorageClass bound
to a folder on the node holding the pod's file; and nothing of the node left on the machine once stopped."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.testing import pod_ready, wait_for
from kubeplumb.rest import RestClient
from tests.nodeimages.facts import containerd_name, hello
from tests.real.controlplane import ControlPlane
from tests.real.nodeagent import volume_folder
from tests.real.nodesession import NodeBackend
from tests.real.realnode import RealNode

pytestmark = pytest.mark.node


def _pod(name: str, node: str | None, *, claim: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": containerd_name(hello("1.0.0").ref),
                "imagePullPolicy": "Never",
                "command": ["/bin/sh", "-c", "trap 'exit 0' TERM; echo started-$HOSTNAME; sleep 3600 & wait"],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}] if claim else [],
            }
        ],
        "terminationGracePeriodSeconds": 5,
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}] if claim else [],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_a_node_of_its_own_runs_a_pod_serves_exec_and_logs_and_leaves_nothing(
    real_cp: ControlPlane, real_ns: str, tmp_path: Path
) -> None:
    """Invariant: once the node is stopped no process, mount, cgroup, network namespace or veth of it is left."""
    rest = RestClient(real_cp.api_client())
    name = f"check-{uuid.uuid4().hex[:6]}"
    node = RealNode(real_cp, tmp_path / "node", name=name)
    try:
        with node:
            assert node.start_seconds > 0
            rest.create("v1", "pods", real_ns, _pod("p", name))
            wait_for("pod p Running and Ready", lambda: pod_ready(rest.get("v1", "pods", real_ns, "p")), 120)
            pod = rest.get("v1", "pods", real_ns, "p")
            assert node.net is not None
            assert pod["status"]["podIP"].startswith(node.net.pod_subnet.rsplit(".", 1)[0] + "."), pod["status"]
            said = real_cp.kubectl(
                "-n", real_ns, "exec", "p", "--", "/bin/sh", "-c", "echo out; echo err >&2; exit 3", check=False
            )
            assert (said.returncode, said.stdout) == (3, "out\n"), said
            logs = wait_for("the pod's log", lambda: real_cp.kubectl("-n", real_ns, "logs", "p").stdout or None, 30)
            assert logs == "started-p\n"
            rest.delete("v1", "pods", real_ns, "p")
            wait_for("pod p gone", lambda: rest.get_or_none("v1", "pods", real_ns, "p") is None, 60)
            rest.delete("v1", "nodes", None, name)
    finally:
        node.stop()
    assert node.leftovers() == []


def test_a_claim_of_the_default_class_holds_the_pods_files_on_the_node(node_joined: NodeBackend, real_ns: str) -> None:
    rest = RestClient(node_joined.cp.api_client())
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    made = rest.create("v1", "persistentvolumeclaims", real_ns, claim)
    rest.create("v1", "pods", real_ns, _pod("writer", None, claim="data"))
    wait_for("pod writer Ready", lambda: pod_ready(rest.get("v1", "pods", real_ns, "writer")), 120)
    node_joined.cp.kubectl("-n", real_ns, "exec", "writer", "--", "/bin/sh", "-c", "echo kept > /data/file")
    folder = volume_folder(node_joined.node.storage, made)
    assert (folder / "file").read_text() == "kept\n"
    bound = rest.get("v1", "persistentvolumeclaims", real_ns, "data")
    assert bound["status"]["phase"] == "Bound", yaml.safe_dump(bound)
