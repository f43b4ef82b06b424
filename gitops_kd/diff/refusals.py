"""Forbidden changes: what the apiserver, KubeDirector or the app's own upgrade stanza would not allow (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gitops_kd.diff.fields import app_role_facts, cluster_role_facts
from gitops_kd.diff.transition import compare_versions
from gitops_kd.kd.layout import STATEFULSET_MUTABLE_FIELDS
from gitops_kd.observe.model import ObservedApp, ObservedCluster
from gitops_kd.plan.actions import Refusal
from gitops_kd.spec.freeze import thaw
from gitops_kd.spec.model import KDApp, KDCluster

_MUTABLE = ", ".join(sorted(STATEFULSET_MUTABLE_FIELDS))


def app_refusals(app: KDApp, live: ObservedApp | None, users: Iterable[ObservedCluster]) -> list[Refusal]:
    """Refusals for changing the live KDApp into ``app``; ``users`` are the live clusters using it."""
    if live is None:
        return []
    users = list(users)
    out: list[Refusal] = []
    if live.distro_id is not None and live.distro_id != app.distro_id:
        out.append(Refusal(app.source, "spec.distroID", (
            f'changing distroID from "{live.distro_id}" to "{app.distro_id}" is not allowed: an upgrade keeps '
            f'the distribution and changes only the version')))
    live_roles = app_role_facts(thaw(live.spec))
    for rid in sorted(set(live_roles) - set(app.role_ids)):
        for cluster in users:
            members = _members(cluster, rid)
            if members:
                out.append(Refusal(app.source, f"spec.roles[{rid}]", (
                    f'role "{rid}" is removed but KubeDirectorCluster {cluster.namespace}/{cluster.name} has '
                    f'{members} member(s) in it; remove the role from the cluster first')))
    if not users:
        return out
    try:
        order = compare_versions(app.version, live.version)
    except ValueError:
        return out  # a live version that is not semver: nothing to compare against
    names = ", ".join(f"{c.namespace}/{c.name}" for c in users)
    if order > 0 and (app.upgrade is None or app.upgrade.rule_for_upgrade_from(live.version) is None):
        out.append(Refusal(app.source, "spec.upgrade.from", (
            f'no from[] rule matches the live version {live.version}: upgrading {live.version} -> {app.version} '
            f'is refused while clusters use the app ({names})')))
    if order < 0 and (live.upgrade is None or live.upgrade.rule_for_downgrade_to(app.version) is None):
        out.append(Refusal(app.source, "spec.version", (
            f'downgrade {live.version} -> {app.version} is refused: the live version\'s upgrade.downgrade.to '
            f'lists no rule for {app.version} (clusters use the app: {names})')))
    return out


def _members(cluster: ObservedCluster, role_id: str) -> int:
    spec_members = cluster.live_members(role_id) or 0
    return max(spec_members, len(cluster.role_pods(role_id)))


def cluster_refusals(cluster: KDCluster, live: ObservedCluster | None) -> list[Refusal]:
    """Refusals for changing the live KDCluster into ``cluster`` (KubeDirector's and the apiserver's rules)."""
    if live is None:
        return []
    out: list[Refusal] = []
    if live.app != cluster.app:
        out.append(Refusal(cluster.source, "spec.app", (
            f'changing the app of a KubeDirectorCluster from "{live.app}" to "{cluster.app}" is not allowed by '
            f'KubeDirector; create a new cluster instead')))
    live_roles = cluster_role_facts(live.spec)
    for i, role in enumerate(cluster.body.get("spec", {}).get("roles") or ()):
        rid = role.get("id")
        old = live_roles.get(rid)
        if old is None:
            continue
        field = f"spec.roles[{i}]"
        if _storage(old.get("storage")) != _storage(role.get("storage")):
            out.append(Refusal(cluster.source, f"{field}.storage", _immutable(
                rid, "volumeClaimTemplates", _storage(old.get("storage")), _storage(role.get("storage")))))
        if (old.get("podLabels") or {}) != (role.get("podLabels") or {}):
            out.append(Refusal(cluster.source, f"{field}.podLabels", _immutable(
                rid, "selector", old.get("podLabels") or {}, role.get("podLabels") or {})))
    return out


def _storage(value: Any) -> tuple[str | None, str | None] | None:
    if not value:
        return None
    return (str(value.get("size")) if value.get("size") is not None else None, value.get("storageClassName"))


def _immutable(role: str, field: str, old: Any, new: Any) -> str:
    return (f'role "{role}": this changes the role StatefulSet\'s spec.{field} ({old!r} -> {new!r}), which the '
            f'apiserver refuses to update (updates may change only {_MUTABLE})')
