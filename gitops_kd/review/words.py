"""Shared wording of review renderings: durations, names, data rules, steps (pure)."""

from __future__ import annotations

import shlex

from gitops_kd.diff.rollback import ROLL_FORWARD, Rollback
from gitops_kd.review.model import DirRule, PortChange, Step
from gitops_kd.spec.state import Key

UPPER_BOUND = (
    "an upper bound: every pod takes podReadyTimeoutSeconds plus the timeouts of its migrate "
    "commands, hook and gate; real rollouts are usually much faster"
)


def duration(seconds: int) -> str:
    """3725 -> "1h 2m 5s"; 0 -> "0s"."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return " ".join(p for p in parts if p) or "0s"


def name(key: Key) -> str:
    return f"{key[0]}/{key[1]}"


def rule(d: DirRule, quote: str = "`") -> str:
    """keep | discard | restore | migrate: `command` (timeout Ns) | none: refused."""
    if d.action == "migrate" and d.command is not None:
        return f"migrate: {quote}{shlex.join(d.command)}{quote} (timeout {d.timeout_seconds}s)"
    if d.action == "refused":
        return "none: the version change is refused"
    return d.action


def roles_of(step: Step) -> str:
    return ", ".join(step.roles) if step.roles is not None else "all roles"


def ports(pairs: tuple[tuple[str, int], ...]) -> str:
    return ", ".join(f"{n} {p}" for n, p in pairs) or "none"


def port_change(change: PortChange, arrow: str) -> str:
    """A role's member Service port change, saying that each Service moves with its own member's pod."""
    moved = ", ".join(str(o) for o in change.members)
    order = f": members {moved}, in that order" if moved else ""
    return (
        f"{ports(change.before)} {arrow} {ports(change.after)} ({change.services} Service(s); each moves with its own "
        f"member, as that member's pod is replaced, never before{order})"
    )


def rollback_sentence(back: Rollback) -> str:
    """Whether reverting the merge rolls the cluster back, for a review."""
    if back.possible:
        return f"`git revert` of the merge rolls it back ({back.why})."
    return f"`git revert` of the merge would be REFUSED ({back.why}); {ROLL_FORWARD}."
