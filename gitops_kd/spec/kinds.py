"""The kinds a repository's manifests hold: KubeDirector's KDApp and KDCluster, and their API group and version."""

from __future__ import annotations

API_GROUP = "kubedirector.hpe.com"
API_VERSION = f"{API_GROUP}/v1beta1"
KDAPP_KIND = "KubeDirectorApp"
KDCLUSTER_KIND = "KubeDirectorCluster"
