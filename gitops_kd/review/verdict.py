"""Whether an app's version change is allowed by the upgrade stanza's from[] or downgrade.to[] rules (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from gitops_kd.diff import compare_versions
from gitops_kd.diff.model import CREATE, DOWNGRADE, UPGRADE
from gitops_kd.observed import ObservedApp
from gitops_kd.spec.model import KDApp
from gitops_kd.spec.upgrade import PersistRules

SAME = "same version"


def _index(rules: Sequence[PersistRules], rule: PersistRules) -> int:
    return next(i for i, r in enumerate(rules) if r is rule)


def app_verdict(app: KDApp, live: ObservedApp | None, used: bool) -> tuple[str, bool, str]:
    """(direction, allowed, why) for moving the running app ``live`` to ``app``; ``used``: clusters run it."""
    if live is None:
        return CREATE, True, "new app"
    try:
        order = compare_versions(app.version, live.version)
    except ValueError:
        return SAME, True, f"running version {live.version} is not semver: not compared"
    if order == 0:
        return SAME, True, "no version change"
    idle = "" if used else "; no cluster runs it, so nothing is upgraded"
    if order > 0:
        upgrade = app.upgrade
        rule = upgrade.rule_for_upgrade_from(live.version) if upgrade is not None else None
        if upgrade is not None and rule is not None:
            i = _index(upgrade.upgrade_from, rule)
            return UPGRADE, True, f'allowed by spec.upgrade.from[{i}] (versions "{rule.versions.text}"){idle}'
        why = (
            "the new version has no spec.upgrade"
            if upgrade is None
            else f"no spec.upgrade.from[] rule of {app.version} matches {live.version}"
        )
        return UPGRADE, not used, (f"refused: {why}" if used else f"{why}{idle}")
    left = live.upgrade
    down = left.rule_for_downgrade_to(app.version) if left is not None else None
    if left is not None and down is not None:
        i = _index(left.downgrade_to or (), down)
        return (
            DOWNGRADE,
            True,
            (f'allowed by spec.upgrade.downgrade.to[{i}] of {live.version} (versions "{down.versions.text}"){idle}'),
        )
    why = f"{live.version} declares no spec.upgrade.downgrade.to[] rule for {app.version}"
    return DOWNGRADE, not used, (f"refused: {why}" if used else f"{why}{idle}")
