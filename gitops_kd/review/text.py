"""A review as plain text for a terminal (pure)."""

from __future__ import annotations

from collections.abc import Iterator

from gitops_kd.review.model import Review
from gitops_kd.review.words import UPPER_BOUND, duration, name, port_change, roles_of, rollback_sentence, rule


def text(r: Review) -> str:
    """Refusals first, then each app's version change and each cluster's rollout, in wave order."""
    return "\n".join(_lines(r)) + "\n"


def _lines(r: Review) -> Iterator[str]:
    yield f"plan {r.base} -> {r.head}, compared with {r.against}"
    if r.refused:
        yield f"REFUSED ({len(r.refusals)}): nothing would be applied"
        yield from (f"  {x.file}: {x.field}: {x.reason}" for x in r.refusals)
    yield "apps:"
    for a in r.apps:
        version = f"{a.before} -> {a.after}" if a.before and a.before != a.after else f"{a.after}"
        yield f"  {name(a.key)} ({a.file}): {version} ({a.direction}): {a.verdict}"
        yield from (f"    {c}" for c in a.changes)
    yield "clusters (wave order):"
    for c in r.clusters:
        head = f"  wave {c.wave} {name(c.key)} ({c.file}): "
        if c.state == "create":
            yield head + f"new, {c.app} {c.to_version}: " + ", ".join(f"{x.role} x{x.members}" for x in c.roles)
            continue
        if c.state != "rollout":
            yield head + ("no rollout" + (f"; spec: {'; '.join(c.changes)}" if c.changes else ""))
            continue
        versions = c.to_version if c.from_version in (None, c.to_version) else f"{c.from_version} -> {c.to_version}"
        yield head + (f"{c.direction} {versions}, {c.replaced} pod(s) replaced, at most {duration(c.estimate_seconds)}")
        for x in c.roles:
            steps = [s for s, on in (("hook", x.hook), ("gate", x.gate)) if on]
            yield f"    {x.role}: {x.replaced}/{x.members} pod(s)" + (f", {' + '.join(steps)}" if steps else "")
            yield from (f"      {d.directory}: {rule(d, quote='')}" for d in x.dirs)
            if not x.storage:
                yield "      (no persistent storage)"
        if c.hook is not None:
            yield f"    hook: {c.hook.detail} (timeout {c.hook.timeout_seconds}s, {roles_of(c.hook)})"
        if c.gate is not None:
            yield (
                f"    gate: {c.gate.detail} (every {c.gate.period_seconds}s, timeout {c.gate.timeout_seconds}s, "
                f"{roles_of(c.gate)})"
            )
        yield f"    failure policy: {c.failure_policy}; pod ready timeout {c.pod_ready_timeout_seconds}s"
        if c.rollback is not None:
            yield f"    rollback: {rollback_sentence(c.rollback)}"
        yield from (f"    service ports {p.role}: {port_change(p, '->')}" for p in c.ports)
    yield from (f"note: {n}" for n in r.notes)
    yield f"total: {r.replaced} pod(s) replaced, at most {duration(r.estimate_seconds)} ({UPPER_BOUND})"
