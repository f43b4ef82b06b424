"""The real node's configuration files: containerd's (its own root, state, socket; restrict_oom_score_adj, which
this machine needs), the CNI conflist (a bridge on the node's private /24) and the KubeletConfiguration."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

KUBELET_PORT = 10250  # in the node's own network namespace: no clash with anything on the machine
KUBELET_HEALTHZ_PORT = 10248


def containerd_config(work: Path, socket: Path, runc: Path, cni_bin: Path, cni_conf: Path, sandbox_image: str) -> str:
    """containerd's config.toml (version 2): everything under ``work``; the CRI plugin with runc, overlayfs,
    the CNI folders and the sandbox image. restrict_oom_score_adj: without it every sandbox fails here (runc
    cannot set a negative OOM score: ../shared/REALNODE.md)."""
    return f"""version = 2
root = "{work / "root"}"
state = "{work / "state"}"

[grpc]
  address = "{socket}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{sandbox_image}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{runc}"
        Root = "{work / "runc"}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{cni_conf}"
"""


def cni_conflist(pod_subnet: str, ipam_dir: Path) -> str:
    """A bridge (the gateway on the subnet's first address) with host-local addresses from ``pod_subnet``."""
    return json.dumps(
        {
            "cniVersion": "0.4.0",
            "name": "gitops-kd-node",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": "cni0",
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": pod_subnet}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(ipam_dir),
                    },
                }
            ],
        },
        indent=1,
    )


def kubelet_config(node_ip: str, ca: Path, cert: Path, key: Path) -> str:
    """A KubeletConfiguration (v1beta1) for this machine: cgroupfs, no swap check, no QoS cgroups or node
    allocatable enforcement, serving on the node IP with a cert the API server trusts, clients by the cluster CA;
    no eviction or image garbage collection on a shared machine's disk."""
    return yaml.safe_dump(
        {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": node_ip,
            "port": KUBELET_PORT,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": KUBELET_HEALTHZ_PORT,
            "readOnlyPort": 0,
            "cgroupDriver": "cgroupfs",
            "failSwapOn": False,
            "cgroupsPerQOS": False,
            "enforceNodeAllocatable": [],
            "tlsCertFile": str(cert),
            "tlsPrivateKeyFile": str(key),
            "authentication": {"x509": {"clientCAFile": str(ca)}, "webhook": {"enabled": False}, "anonymous": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "serializeImagePulls": False,
            "resolvConf": "/etc/resolv.conf",
        }
    )
