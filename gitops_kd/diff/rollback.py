"""Whether `git revert` of an upgrade's commit would roll a cluster back, and what to advise instead (pure).

A revert is a downgrade from the version the commit brought (``target``) to the one the cluster came from
(``origin``); it is accepted only when the target's upgrade stanza lists a ``downgrade.to`` rule for the origin
(diff/refusals). Status, the UI and the pull-request comment advise the revert only when that holds; otherwise
they say why not and that the way out is forward: a commit of a version whose ``upgrade.from[]`` matches the target.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitops_kd.spec.upgrade import UpgradeSpec


@dataclass(frozen=True)
class Rollback:
    """``possible``: a revert of the commit would be accepted; ``why``: the reason either way (a sentence);
    ``one_way``: for a native switch of spec.app (diff/switch.one_way), that the revert is accepted only until
    KubeDirector has finished it, and what to do then ("" otherwise)."""

    possible: bool
    why: str
    one_way: str = ""

    def advice(self, commit: str) -> str:
        """What to tell the operator of a stalled or merged ``commit``."""
        if self.possible:
            return f"git revert {commit} rolls back ({self.why})"
        return f"git revert {commit} would be refused ({self.why}); {ROLL_FORWARD}"


ROLL_FORWARD = "roll forward instead: commit a fix as a new version whose upgrade.from[] matches the failed one"


def rollback(target: str, origin: str | None, stanza: UpgradeSpec | None) -> Rollback:
    """Whether reverting the upgrade ``origin`` -> ``target`` (``stanza``: the target's upgrade stanza) is accepted."""
    if not origin:
        return Rollback(False, "the version the cluster came from is unknown")
    if origin == target:
        return Rollback(True, f"the cluster stays at {target}")
    if stanza is None or stanza.rule_for_downgrade_to(origin) is None:
        return Rollback(
            False, f"version {target} allows no downgrade to {origin}: its upgrade.downgrade.to lists no rule for {origin}"
        )
    return Rollback(True, f"version {target} allows the downgrade to {origin}: upgrade.downgrade.to")


__all__ = ["ROLL_FORWARD", "Rollback", "rollback"]
