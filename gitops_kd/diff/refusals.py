"""Forbidden changes: what the apiserver, KubeDirector or the app's own upgrade stanza would not allow (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gitops_kd.diff.fields import app_role_facts
from gitops_kd.diff.model import Refusal
from gitops_kd.diff.transition import compare_versions, running_version, stanza_of
from gitops_kd.kd.layout import STATEFULSET_MUTABLE_FIELDS
from gitops_kd.observed import ObservedApp, ObservedCluster
from gitops_kd.spec.freeze import thaw
from gitops_kd.spec.model import KDApp, KDCluster

_MUTABLE = ", ".join(sorted(STATEFULSET_MUTABLE_FIELDS))


def app_refusals(
    app: KDApp, live: ObservedApp | None, users: Iterable[ObservedCluster], live_facts: dict[str, dict[str, Any]] | None = None
) -> list[Refusal]:
    """Refusals for changing the live KDApp into ``app``; ``users`` are the live clusters using it;
    ``live_facts`` is app_role_facts(live.spec) when the caller has it already."""
    if live is None:
        return []
    users = list(users)
    out: list[Refusal] = []
    if live.distro_id is not None and live.distro_id != app.distro_id:
        out.append(
            Refusal(
                app.source,
                "spec.distroID",
                (
                    f'changing distroID from "{live.distro_id}" to "{app.distro_id}" is not allowed: an upgrade keeps '
                    f"the distribution and changes only the version"
                ),
            )
        )
    live_roles = live_facts if live_facts is not None else app_role_facts(live.spec)
    for rid in sorted(set(live_roles) - set(app.role_ids)):
        for cluster in users:
            members = _members(cluster, rid)
            if members:
                out.append(
                    Refusal(
                        app.source,
                        f"spec.roles[{rid}]",
                        (
                            f'role "{rid}" is removed but KubeDirectorCluster {cluster.namespace}/{cluster.name} has '
                            f"{members} member(s) in it; remove the role from the cluster first"
                        ),
                    )
                )
    # the version each cluster runs comes from what it shows (stock KubeDirector holds the KDApp at its old spec)
    by_version: dict[str, list[ObservedCluster]] = {}
    for cluster in users:
        by_version.setdefault(running_version(app.version, live, cluster) or live.version, []).append(cluster)
    for version in sorted(by_version):
        out += version_refusals(app, live, version, by_version[version])
    return out


def version_refusals(app: KDApp, live: ObservedApp, version: str, users: list[ObservedCluster]) -> list[Refusal]:
    """The in-use rules for clusters running ``version``: an upgrade needs a from[] rule of Git's app for it, a
    downgrade a downgrade.to rule in the stanza of ``version`` (the live KDApp's, or the one the KDRollout
    recorded when the KDApp is held)."""
    try:
        order = compare_versions(app.version, version)
    except ValueError:
        return []  # a live version that is not semver: nothing to compare against
    names = ", ".join(f"{c.namespace}/{c.name}" for c in users)
    if order > 0 and (app.upgrade is None or app.upgrade.rule_for_upgrade_from(version) is None):
        return [
            Refusal(
                app.source,
                "spec.upgrade.from",
                (
                    f"no from[] rule matches the live version {version}: upgrading {version} -> {app.version} "
                    f"is refused while clusters use the app ({names})"
                ),
            )
        ]
    if order < 0:
        stanzas = [stanza_of(version, live, c.rollout) for c in users]
        if any(s is None or s.rule_for_downgrade_to(app.version) is None for s in stanzas):
            return [
                Refusal(
                    app.source,
                    "spec.version",
                    (
                        f"downgrade {version} -> {app.version} is refused: the live version's upgrade.downgrade.to "
                        f"lists no rule for {app.version} (clusters use the app: {names})"
                    ),
                )
            ]
    return []


def _members(cluster: ObservedCluster, role_id: str) -> int:
    spec_members = cluster.live_members(role_id) or 0
    return max(spec_members, len(cluster.role_pods(role_id)))


KD_MODIFIED_ROLE = "Role({role}) properties other than the members count cannot be modified while role members exist."
KD_READ_ONLY = "The {prop} property is read-only."


def cluster_refusals(cluster: KDCluster, live: ObservedCluster | None, *, app_switch: bool = False) -> list[Refusal]:
    """Refusals for changing the live KDCluster into ``cluster``, as KubeDirector's webhook decides them
    (pkg/validator/cluster.go): ``app`` and ``appCatalog`` are read-only, and a role that has members may
    change only ``members``. ``app_switch``: the live-app-upgrade branch judges a changed ``app`` (diff/switch.py).
    Storage (volumeClaimTemplates) and podLabels (the selector) are also
    StatefulSet fields the apiserver would not update; the reason says so."""
    if live is None:
        return []
    out: list[Refusal] = []
    spec = cluster.body.get("spec") or {}
    if live.app != cluster.app and not app_switch:
        out.append(
            Refusal(
                cluster.source,
                "spec.app",
                (
                    f'changing the app of a KubeDirectorCluster from "{live.app}" to "{cluster.app}" is not allowed by '
                    f'KubeDirector ("{KD_READ_ONLY.format(prop="app")}"); create a new cluster instead'
                ),
            )
        )
    live_catalog = live.spec.get("appCatalog")
    if spec.get("appCatalog") is not None and live_catalog is not None and spec["appCatalog"] != live_catalog:
        out.append(
            Refusal(
                cluster.source,
                "spec.appCatalog",
                (f'appCatalog "{live_catalog}" -> "{spec["appCatalog"]}": "{KD_READ_ONLY.format(prop="appCatalog")}"'),
            )
        )
    live_roles = {str(r.get("id")): thaw(r) for r in live.spec.get("roles") or ()}
    for i, role in enumerate(spec.get("roles") or ()):
        rid = str(role.get("id"))
        if rid not in live_roles or not _has_members(live, rid):
            continue
        for prop in _changed_properties(live_roles[rid], role):
            reason = f'"{KD_MODIFIED_ROLE.format(role=rid)}" ({prop} changed; only members may change)'
            if prop in _STATEFULSET_FIELDS:
                reason += "; " + _immutable(rid, _STATEFULSET_FIELDS[prop])
            out.append(Refusal(cluster.source, f"spec.roles[{i}].{prop}", reason))
    return out


_STATEFULSET_FIELDS = {"storage": "volumeClaimTemplates", "podLabels": "selector"}


def _has_members(live: ObservedCluster, role_id: str) -> bool:
    """KubeDirector's test: the role has status (members exist or are going away); pods count too."""
    status_roles = (live.raw.get("status") or {}).get("roles") or ()
    return bool(live.role_pods(role_id)) or any(r.get("id") == role_id for r in status_roles) or bool(live.live_members(role_id))


def _changed_properties(live_role: dict[str, Any], role: Any) -> list[str]:
    """Role properties (other than members) that differ; defaults KubeDirector fills in are not changes."""
    want = {k: thaw(v) for k, v in role.items() if k != "members"}
    have = {k: v for k, v in live_role.items() if k != "members"}
    storage = have.get("storage")
    if isinstance(storage, dict) and "storageClassName" not in (want.get("storage") or {}):
        have["storage"] = {k: v for k, v in storage.items() if k != "storageClassName"}
    return sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))


def _immutable(role: str, field: str) -> str:
    return (
        f'role "{role}": the role StatefulSet\'s spec.{field} would change, which the apiserver refuses to '
        f"update (updates may change only {_MUTABLE})"
    )
