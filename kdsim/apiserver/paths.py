"""Parsing of Kubernetes API request paths into (group, version, namespace, resource, name, subresource)."""

from __future__ import annotations

from dataclasses import dataclass

_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True)
class ApiPath:
    """One resource request path; `watch` is True for the deprecated /watch/ prefix."""

    group: str
    version: str
    plural: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    watch: bool = False

    @property
    def resource(self) -> str:
        """`pods` or `pods/status`: how RBAC and fault rules name the target."""
        return f"{self.plural}/{self.subresource}" if self.subresource else self.plural


def parse(path: str) -> ApiPath | None:
    """Parse /api/v1/... or /apis/<group>/<version>/...; None when `path` names no resource."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch = False
    if rest and rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and not (group == "" and len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    return ApiPath(
        group=group,
        version=version,
        plural=rest[0],
        namespace=namespace,
        name=rest[1] if len(rest) > 1 else None,
        subresource=rest[2] if len(rest) > 2 else None,
        watch=watch,
    )
