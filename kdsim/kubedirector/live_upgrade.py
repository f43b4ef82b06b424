"""KubeDirector's live-app-upgrade branch (7ba1ec2): its rules for a KDCluster's `spec.app` switch and a KDApp's
`upgradable`, and its reaction to a switch (pure; learned from the branch's pkg/validator/cluster.go
validateGeneralClusterChanges / validateAppSpecChanges, pkg/validator/app.go, pkg/controller/kubedirectorcluster
cluster.go handleClusterUpgrade and pkg/executor/statefulset.go UpdateStatefulSetNonReplicas).

- An update of a cluster that is not `configured` may change nothing but a switch back to
  `status.upgradeInfo.prevApp` (a rollback); a switch of `spec.app` may change nothing else; the new app keeps the
  `distroID`, has a strictly newer version (coreos/go-semver) unless rolling back, the current app is
  `upgradable: true`, and the new app's spec equals the current one's but for role images, config package URLs
  (only together with a new image), `version`, `upgradable` and cardinalities that fit the role's member count.
- The app webhook lets `upgradable` be set on a KDApp in use when it was unset (its one allowed spec change).
- On a switch KD records `status.upgradeInfo` {isRollingBack, prevApp}, patches every role StatefulSet's first
  container (and first init container) to the new app's image and relies on the StatefulSet's rolling update; it
  clears `upgradeInfo` once every role finished (the emulator: every member pod runs the role's image, Ready).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

NOT_ONLY_APP = (
    "Change to spec not allowed because not only spec.app field was changed. Do not change spec.app "
    "with other spec fields in the same time."
)
CLUSTER_NOT_READY = "The %s cluster spec cannot be changed, as currently it is busy with other changes."
APP_IS_UPGRADING = "The %s cluster already is upgrading, but it can be rolled back to the previous app"
NOT_NEWER = "The candidate app version %s is not newer than version %s that is already running at the current cluster."
BAD_VERSION = "The version string %s cannot be recognized according Semantic Versioning rules (see https://semver.org/)."
NOT_UPGRADABLE = "The application %s of version %s doesn't support live upgrade."
TOO_DIFFERENT = (
    "The candidate app %s spec is too different from the actual app %s spec. Currently the potential "
    "differences are only for role image tags and cardinality."
)
BAD_CARDINALITY = "The candidate app %s %s role cardinality doesn't satisfy the current cluster %s role active members count"
IMAGE_NOT_CHANGED = "As role %s spec was changed its image also must be changed"
BAD_DISTRO = "Invalid application with distroId: %s. Expected application with distroId: %s"
APP_NOT_FOUND = "Invalid app(%s). This app resource ID has not been registered."  # catalog.GetApp's error
MODE = "live-app-upgrade"  # the embedded cluster's kd_app_edits for the branch (kdsim/apiserver/kd_webhook.py)
CONFIGURED = "configured"
UPGRADING, ROLLING_BACK = "upgrading", "rollingBack"

FindApp = Callable[[Mapping[str, Any]], "dict[str, Any] | None"]  # a cluster object -> its stored KDApp
_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def _semver(text: str) -> tuple[tuple[int, int, int], str] | None:
    """coreos/go-semver NewVersion: "+metadata" and "-prerelease" split off, then exactly three integers."""
    core = str(text).split("+", 1)[0]
    core, _, pre = core.partition("-")
    found = _SEMVER.match(core)
    if found is None:
        return None
    return (int(found[1]), int(found[2]), int(found[3])), pre


def _less(a: tuple[tuple[int, int, int], str], b: tuple[tuple[int, int, int], str]) -> bool:
    if a[0] != b[0]:
        return a[0] < b[0]
    if not a[1] or not b[1]:
        return bool(a[1]) and not b[1]  # a version without a prerelease is the greater
    for x, y in zip(a[1].split("."), b[1].split("."), strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return int(x) < int(y)
        return x < y if not (x.isdigit() or y.isdigit()) else x.isdigit()
    return len(a[1].split(".")) < len(b[1].split("."))


def cardinality(text: Any) -> tuple[int, bool]:
    """catalog.GetRoleCardinality: "N" -> (N, False), "N+" -> (N, True)."""
    value = str(text or "0")
    scaled = value.endswith("+")
    try:
        return int(value.rstrip("+") or 0), scaled
    except ValueError:
        return 0, scaled


def _package_url(role: Mapping[str, Any]) -> Any:
    package = role.get("configPackage")
    return package.get("packageURL") if isinstance(package, Mapping) else None


def app_spec_error(cluster: Mapping[str, Any], prev_app: Mapping[str, Any], target_app: Mapping[str, Any]) -> str | None:
    """validateAppSpecChanges: KD's message when the target app differs from the running one in a way the branch
    does not allow, else None (both apps as KD stores them)."""
    prev_spec = copy.deepcopy(dict(prev_app.get("spec") or {}))
    target_spec = dict(target_app.get("spec") or {})
    prev_roles = prev_spec.get("roles") or []
    status_roles = ((cluster.get("status") or {}).get("roles")) or []
    for role in target_spec.get("roles") or ():
        rid = role.get("id")
        index = 0
        for i, prev_role in enumerate(prev_roles):
            if prev_role.get("id") != rid:
                continue
            index = i
            image_changed = prev_role.get("imageRepoTag") != role.get("imageRepoTag")
            if image_changed:
                prev_role["imageRepoTag"] = role.get("imageRepoTag")
            if _package_url(prev_role) != _package_url(role):
                if not image_changed:
                    return cast(str, IMAGE_NOT_CHANGED % prev_role.get("id"))
                if isinstance(prev_role.get("configPackage"), dict):
                    prev_role["configPackage"]["packageURL"] = _package_url(role)
            break
        for rs in status_roles:
            if rs.get("id") != rid:
                continue
            allowed, scaled = cardinality(role.get("cardinality"))
            count = len(rs.get("members") or ())
            if not (count >= allowed if scaled else count == allowed):
                return BAD_CARDINALITY % ((target_app.get("metadata") or {}).get("name"), rid, rid)
            if prev_roles:
                prev_roles[index]["cardinality"] = role.get("cardinality")
    for key in ("version", "upgradable"):  # Version and Upgradable are ignored (set from the target)
        if key in target_spec:
            prev_spec[key] = target_spec[key]
        else:
            prev_spec.pop(key, None)
    if prev_spec != target_spec:
        return TOO_DIFFERENT % ((target_app.get("metadata") or {}).get("name"), (prev_app.get("metadata") or {}).get("name"))
    return None


def general_errors(old: Mapping[str, Any], new: Mapping[str, Any], find_app: FindApp) -> list[str]:
    """validateGeneralClusterChanges of the branch for an update of ``old`` into ``new`` (as sent): the switch rules
    above, then appCatalog read-only (its error message is the stock one, given by the caller's format)."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    status = old.get("status") or {}
    name = (old.get("metadata") or {}).get("name")
    configured = status.get("state") == CONFIGURED
    app_modified = new_spec.get("app") != old_spec.get("app")
    info = status.get("upgradeInfo")
    errors: list[str] = []
    new_app, prev_app = find_app(new), find_app(old)
    for obj, found in ((new, new_app), (old, prev_app)):
        if found is None:
            errors.append(APP_NOT_FOUND % (obj.get("spec") or {}).get("app"))
    rollback = bool(app_modified and info and not info.get("isRollingBack") and new_spec.get("app") == info.get("prevApp"))
    fields_modified = {**old_spec, "app": new_spec.get("app")} != dict(new_spec)
    if not configured:
        if fields_modified:
            errors.append(CLUSTER_NOT_READY % name)
        if not rollback and app_modified:
            errors.append(APP_IS_UPGRADING % name)
        if not rollback:
            return errors
    if app_modified and fields_modified:
        return [*errors, NOT_ONLY_APP]
    if app_modified and new_app is not None and prev_app is not None:
        errors += _switch_errors(old, prev_app, new_app, rollback)
    return errors


def _switch_errors(old: Mapping[str, Any], prev_app: Mapping[str, Any], new_app: Mapping[str, Any], rollback: bool) -> list[str]:
    prev_spec, new_spec = prev_app.get("spec") or {}, new_app.get("spec") or {}
    errors: list[str] = []
    if prev_spec.get("distroID") != new_spec.get("distroID"):
        errors.append(BAD_DISTRO % (new_spec.get("distroID"), prev_spec.get("distroID")))
    prev_version, new_version = _semver(str(prev_spec.get("version", ""))), _semver(str(new_spec.get("version", "")))
    if prev_version is None or new_version is None:
        bad = prev_spec.get("version") if prev_version is None else new_spec.get("version")
        return [*errors, BAD_VERSION % bad]
    if not _less(prev_version, new_version) and not rollback:
        return [*errors, NOT_NEWER % (new_spec.get("version"), prev_spec.get("version"))]
    if prev_spec.get("upgradable") is not True:
        return [*errors, NOT_UPGRADABLE % (prev_spec.get("distroID"), prev_spec.get("version"))]
    found = app_spec_error(old, prev_app, new_app)
    return [*errors, found] if found is not None else errors


def app_update_view(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """The old spec as the branch's app webhook compares it: `upgradable` taken from the update when it was unset."""
    if old_spec.get("upgradable") is None and new_spec.get("upgradable") is not None:
        return {**old_spec, "upgradable": new_spec["upgradable"]}
    return old_spec


def handle_switch(spec_app: str, status: dict[str, Any]) -> bool:
    """handleClusterUpgrade's bookkeeping of status.app / upgradeInfo; True when it started an upgrade or a
    rollback (KD then binds the cluster to the new app too)."""
    info = status.get("upgradeInfo")
    current = status.get("app")
    if current is None:
        status["app"] = spec_app
        return False
    if spec_app != current and not info:
        status["upgradeInfo"] = {"isRollingBack": False, "prevApp": current}
        status["app"] = spec_app
        return True
    if info and not info.get("isRollingBack") and spec_app == info.get("prevApp"):
        status["upgradeInfo"] = {"isRollingBack": True, "prevApp": current}
        status["app"] = spec_app
        return True
    return False


def image_patch(template: Mapping[str, Any], image: str, rolling_back: bool) -> dict[str, Any] | None:
    """UpdateStatefulSetNonReplicas' patch of a role StatefulSet during an upgrade (None: no patch): the first
    container's image (and the first init container's) set to the app's role image when it differs, or always
    while rolling back."""
    spec = template.get("spec") or {}
    containers = [dict(c) for c in spec.get("containers") or ()]
    if not containers or not (rolling_back or containers[0].get("image") != image):
        return None
    containers[0]["image"] = image
    out: dict[str, Any] = {"containers": containers}
    inits = [dict(c) for c in spec.get("initContainers") or ()]
    if inits:
        inits[0]["image"] = image
        out["initContainers"] = inits
    return {"spec": {"template": {"spec": out}}}


def role_done(pods: Sequence[Mapping[str, Any]], image: str, ready: Callable[[Mapping[str, Any]], bool]) -> bool:
    """The emulator's stand-in for every member of a role reporting its upgrade done: each pod runs ``image``."""
    return all(ready(p) and any(c.get("image") == image for c in (p.get("spec") or {}).get("containers") or ()) for p in pods)


__all__ = [
    "MODE",
    "app_spec_error",
    "app_update_view",
    "cardinality",
    "general_errors",
    "handle_switch",
    "image_patch",
    "role_done",
]
