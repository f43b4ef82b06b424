"""When KubeDirector's live-app-upgrade branch admits a KDCluster's `spec.app` switch, and its answer when not (pure).

Facts from the branch (7ba1ec2) pkg/validator/cluster.go validateGeneralClusterChanges / validateAppSpecChanges and
types.go, both apps as KubeDirector stores them (kd/normalize.py):
- a cluster that is not `configured` takes no switch but one back to `status.upgradeInfo.prevApp` (a rollback,
  while KubeDirector's own upgrade record lasts); a switch changes nothing else of the spec (`NOT_ONLY_APP`);
- the same `distroID`; a strictly newer version (semver) unless rolling back;
- the app the cluster runs says `upgradable: true` (a KDApp in use may gain it when unset: app.go);
- the target's spec equals the running app's but for role images, config package URLs (only with a new image),
  `version`, `upgradable` and role cardinalities the role's member count still fits.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from gitops_kd.kd.layout import CONFIGURED
from gitops_kd.spec.version import parse_app_version

UPGRADABLE = "upgradable"  # KDApp spec field of the branch (its CRD; the flavour tells it by this field)
NOT_ONLY_APP = (
    "Change to spec not allowed because not only spec.app field was changed. Do not change spec.app "
    "with other spec fields in the same time."
)
BUSY = "The {cluster} cluster already is upgrading, but it can be rolled back to the previous app"
NOT_NEWER = "The candidate app version {new} is not newer than version {old} that is already running at the current cluster."
BAD_VERSION = "The version string {version} cannot be recognized according Semantic Versioning rules (see https://semver.org/)."
NOT_UPGRADABLE = "The application {distro} of version {version} doesn't support live upgrade."
TOO_DIFFERENT = (
    "The candidate app {new} spec is too different from the actual app {old} spec. Currently the "
    "potential differences are only for role image tags and cardinality."
)
CARDINALITY = (
    "The candidate app {new} {role} role cardinality doesn't satisfy the current cluster {role} role active members count"
)
IMAGE_SAME = "As role {role} spec was changed its image also must be changed"
DISTRO = "Invalid application with distroId: {new}. Expected application with distroId: {old}"


def rollback(status: Mapping[str, Any], target: str) -> bool:
    """True when switching to ``target`` is the branch's rollback: back to upgradeInfo.prevApp while it lasts."""
    info = status.get("upgradeInfo") or {}
    return bool(info) and not info.get("isRollingBack") and info.get("prevApp") == target


def busy(status: Mapping[str, Any], target: str) -> bool:
    """True while the branch refuses the switch for now (the cluster is not configured and it is no rollback):
    a wait, not a refusal of the commit."""
    return status.get("state") != CONFIGURED and not rollback(status, target)


def switch_errors(
    status: Mapping[str, Any],
    running: Mapping[str, Any],
    target: Mapping[str, Any],
    *,
    running_name: str,
    target_name: str,
    may_mark: bool,
) -> list[str]:
    """KubeDirector's answers to switching a cluster with ``status`` from the app it runs (``running``: its stored
    spec) to ``target`` (stored spec); empty when admitted. ``may_mark``: gitops-kd sets `upgradable` on the running
    app first (it is unset, and Git does not say false), so its absence is no refusal."""
    out: list[str] = []
    if running.get("distroID") != target.get("distroID"):
        out.append(DISTRO.format(new=target.get("distroID"), old=running.get("distroID")))
    try:
        old, new = parse_app_version(str(running.get("version"))), parse_app_version(str(target.get("version")))
    except ValueError:
        bad = target.get("version") if _parses(running.get("version")) else running.get("version")
        return [*out, BAD_VERSION.format(version=bad)]
    if not old < new and not rollback(status, target_name):
        return [*out, NOT_NEWER.format(new=target.get("version"), old=running.get("version"))]
    if running.get(UPGRADABLE) is not True and not (may_mark and running.get(UPGRADABLE) is None):
        return [*out, NOT_UPGRADABLE.format(distro=running.get("distroID"), version=running.get("version"))]
    found = spec_difference(status, running, target, running_name=running_name, target_name=target_name)
    return [*out, found] if found is not None else out


def _parses(version: Any) -> bool:
    try:
        parse_app_version(str(version))
    except ValueError:
        return False
    return True


def _url(role: Mapping[str, Any]) -> Any:
    package = role.get("configPackage")
    return package.get("packageURL") if isinstance(package, Mapping) else None


def _fits(cardinality: Any, members: int) -> bool:
    text = str(cardinality or "0")
    try:
        wanted = int(text.rstrip("+") or 0)
    except ValueError:
        return False
    return members >= wanted if text.endswith("+") else members == wanted


def spec_difference(
    status: Mapping[str, Any], running: Mapping[str, Any], target: Mapping[str, Any], *, running_name: str, target_name: str
) -> str | None:
    """validateAppSpecChanges: the branch's answer when ``target`` differs from ``running`` beyond what it allows."""
    seen = copy.deepcopy(dict(running))
    roles = {str(r.get("id")): r for r in seen.get("roles") or ()}
    members = {str(r.get("id")): len(r.get("members") or ()) for r in status.get("roles") or ()}
    for role in target.get("roles") or ():
        rid = str(role.get("id"))
        mine = roles.get(rid)
        if mine is not None:
            new_image = mine.get("imageRepoTag") != role.get("imageRepoTag")
            mine["imageRepoTag"] = role.get("imageRepoTag")
            if _url(mine) != _url(role):
                if not new_image:
                    return IMAGE_SAME.format(role=rid)
                if isinstance(mine.get("configPackage"), dict):
                    mine["configPackage"]["packageURL"] = _url(role)
        if rid in members:
            if not _fits(role.get("cardinality"), members[rid]):
                return CARDINALITY.format(new=target_name, role=rid)
            if mine is not None:
                mine["cardinality"] = role.get("cardinality")
    for key in ("version", UPGRADABLE):
        seen.pop(key, None)
    if seen != {k: v for k, v in target.items() if k not in ("version", UPGRADABLE)}:
        return TOO_DIFFERENT.format(new=target_name, old=running_name)
    return None


__all__ = ["CONFIGURED", "NOT_ONLY_APP", "UPGRADABLE", "busy", "rollback", "spec_difference", "switch_errors"]
