"""Which version change a cluster goes through, and which data rules and stanza govern it (pure)."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from gitops_kd.constants import APP_VERSION_ANNOTATION, Phase
from gitops_kd.diff.model import ADOPT, DOWNGRADE, REBUILD, UPGRADE, Transition
from gitops_kd.observed import ObservedApp, ObservedCluster, ObservedPod, ObservedRollout
from gitops_kd.spec.model import KDApp
from gitops_kd.spec.upgrade import UpgradeSpec
from gitops_kd.spec.version import parse_app_version


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 comparing two app versions by semver precedence (build metadata ignored)."""
    return parse_app_version(a).compare(parse_app_version(b))


def from_version_of(
    target: str, live_app: ObservedApp | None, rollout: ObservedRollout | None, reached: Collection[str] = ()
) -> str | None:
    """The version a cluster comes from: the rollout's record if it already targets ``target``; the
    target of an unfinished rollout to a newer version that already reached the templates (``reached``:
    the live templates' app versions) when going back from it (a revert of a half-done upgrade: some
    members run that version); else the version its pods run (rollout appVersion), else the one version its
    templates carry (on stock KubeDirector the KDApp a cluster uses is held at its old spec: what the cluster
    shows comes first), else the live KDApp's version; None if unknown."""
    if rollout is not None and rollout.target_version == target:
        return rollout.from_version
    if rollout is not None and _unfinished_newer(rollout, target) and rollout.target_version in reached:
        return rollout.target_version
    if rollout is not None and rollout.app_version:
        return rollout.app_version
    if len(reached) == 1:
        return next(iter(reached))
    return live_app.version if live_app is not None else None


def stanza_of(version: str | None, live_app: ObservedApp | None, rollout: ObservedRollout | None) -> UpgradeSpec | None:
    """The upgrade stanza of ``version`` as the cluster knows it: the live KDApp's while it shows that version, else
    the one the rollout recorded for its attempt to it (status.targetStanza; the KDApp is held by stock
    KubeDirector), else the one it recorded of the version its attempt left."""
    if version is None:
        return None
    if live_app is not None and live_app.version == version:
        return live_app.upgrade
    if rollout is not None and rollout.target_version == version and rollout.target_upgrade is not None:
        return rollout.target_upgrade
    if rollout is not None and rollout.from_version == version:
        return rollout.from_upgrade
    return None


def running_version(target: str, live_app: ObservedApp | None, cluster: ObservedCluster) -> str | None:
    """The version a live cluster runs, as a change to ``target`` leaves it: from_version_of with what the cluster
    shows (its KDRollout, its templates' gitops-kd.io/app-version), the live KDApp's only last."""
    return from_version_of(target, live_app, cluster.rollout, template_versions(cluster))


def template_versions(live: ObservedCluster) -> frozenset[str]:
    """The app versions (gitops-kd.io/app-version) the cluster's role StatefulSet templates carry."""
    out: set[str] = set()
    for sts in live.statefulsets.values():
        value = ((sts.template.get("metadata") or {}).get("annotations") or {}).get(APP_VERSION_ANNOTATION)
        if value:
            out.add(str(value))
    return frozenset(out)


def _unfinished_newer(rollout: ObservedRollout, target: str) -> bool:
    """True when the rollout did not finish its own target, which is newer than ``target``."""
    other = rollout.target_version
    if not other or other == rollout.app_version or rollout.phase == Phase.IDLE:
        return False
    try:
        return compare_versions(other, target) > 0
    except ValueError:
        return False


def stale_image(app: KDApp, pod: ObservedPod) -> bool:
    """True when the pod's app container runs another image than the app asks for the pod's role."""
    try:
        want = app.role(pod.role).image
    except KeyError:
        return False
    return bool(pod.image) and bool(want) and pod.image != want


def _rebuilding(rollout: ObservedRollout | None, target: str) -> bool:
    """True while a rebuild attempt at ``target`` is under way (not finished)."""
    return (
        rollout is not None and rollout.direction == REBUILD and rollout.target_version == target and rollout.phase != Phase.IDLE
    )


def _finished_at(rollout: ObservedRollout | None, target: str) -> bool:
    """True when the rollout's last attempt finished at ``target`` (Idle there): the cluster is at ``target``."""
    return (
        rollout is not None and rollout.target_version == target and rollout.app_version == target and rollout.phase == Phase.IDLE
    )


def transition(
    app: KDApp,
    live_app: ObservedApp | None,
    rollout: ObservedRollout | None,
    reached: Collection[str] = (),
    pods: Iterable[ObservedPod] = (),
) -> Transition:
    """The transition of a cluster of ``app`` towards ``app.version``.

    At the same version, it is an adoption only when the ``pods`` prove it (each runs the image the app asks
    for its role); otherwise (a rebuilt image, ``+build`` metadata with a new image, pods that a lost record
    left behind) a rebuild: every such pod is replaced one at a time, with no migration and no hook. That holds
    after an upgrade to the version finished too: its record (from the old version) no longer applies.

    Upgrade rules come from the target's ``from`` rule for the old version; downgrade rules from the
    ``downgrade.to`` rule of the stanza being left: the rollout's record (``from_upgrade``), else the
    live KDApp's stanza while it still shows the old version.
    """
    target = app.version
    old = from_version_of(target, live_app, rollout, reached)
    pods = tuple(pods)
    if old != target and _finished_at(rollout, target) and any(stale_image(app, p) for p in pods):
        old = target  # an upgrade that finished here is not run again for a new image: the pods are rebuilt
    if old is None or compare_versions(old, target) == 0:
        if _rebuilding(rollout, target) or any(stale_image(app, p) for p in pods):
            return Transition(REBUILD, old, target, None, app.upgrade)
        return Transition(ADOPT, old, target, None, app.upgrade)
    if compare_versions(target, old) > 0:
        rules = app.upgrade.rule_for_upgrade_from(old) if app.upgrade is not None else None
        return Transition(UPGRADE, old, target, rules, app.upgrade, stanza_of(old, live_app, rollout))
    left = None
    if rollout is not None and rollout.target_version == target and rollout.from_upgrade is not None:
        left = rollout.from_upgrade
    else:
        left = stanza_of(old, live_app, rollout)
    down_rules = left.rule_for_downgrade_to(target) if left is not None else None
    return Transition(DOWNGRADE, old, target, down_rules, app.upgrade, left)
