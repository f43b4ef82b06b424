"""Discovery documents: /version, /api, /api/v1, /apis and /apis/<group>/<version>."""

from __future__ import annotations

from typing import Any

from kdsim.apiserver.registry import Registry
from kdsim.apiserver.resources import ResourceType

GIT_VERSION = "v1.30.4"

_SUBRESOURCE_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "exec": ["create", "get"],
    "attach": ["create", "get"],
    "portforward": ["create", "get"],
    "log": ["get"],
    "binding": ["create"],
}


def version_info() -> dict[str, str]:
    return {
        "major": "1",
        "minor": "30",
        "gitVersion": GIT_VERSION,
        "gitCommit": "embedded-gitops-kd",
        "gitTreeState": "clean",
        "buildDate": "2024-08-14T00:00:00Z",
        "goVersion": "go1.22.5",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = []
    for name, versions in sorted(registry.groups().items()):
        gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        groups.append({"name": name, "versions": gvs, "preferredVersion": gvs[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    versions = registry.groups().get(group)
    if not versions:
        return None
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs, "preferredVersion": gvs[0]}


def _resource_entry(t: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": list(t.verbs),
    }
    if t.short_names:
        entry["shortNames"] = list(t.short_names)
    if t.categories:
        entry["categories"] = list(t.categories)
    return entry


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = [t for t in registry.all() if t.group == group and t.version == version]
    if not types:
        return None
    resources: list[dict[str, Any]] = []
    for t in types:
        resources.append(_resource_entry(t))
        for sub in t.subresources:
            kind = (
                "Scale"
                if sub == "scale"
                else "Binding"
                if sub == "binding"
                else (
                    "PodExecOptions"
                    if sub == "exec"
                    else "PodAttachOptions"
                    if sub == "attach"
                    else "PodPortForwardOptions"
                    if sub == "portforward"
                    else "Pod"
                    if sub == "log"
                    else t.kind
                )
            )
            item: dict[str, Any] = {
                "name": f"{t.plural}/{sub}",
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": kind,
                "verbs": _SUBRESOURCE_VERBS[sub],
            }
            if sub == "scale":
                item["group"] = "autoscaling"
                item["version"] = "v1"
            resources.append(item)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
