"""A review as Markdown for a pull-request comment: refusals first and loud, then apps and clusters (pure)."""

from __future__ import annotations

from collections.abc import Iterator

from gitops_kd.review.model import ClusterReview, Review
from gitops_kd.review.words import UPPER_BOUND, duration, name, port_change, roles_of, rollback_sentence, rule

MARKER = "<!-- gitops-kd-plan -->"
_POLICY = {"halt": "stop where it is and report", "revert-commit": "stop, report, and revert the commit"}


def markdown(r: Review) -> str:
    """The whole comment; its first line is MARKER, so a CI job can find and update its own comment."""
    return "\n".join(_lines(r)).rstrip() + "\n"


def _lines(r: Review) -> Iterator[str]:
    yield MARKER
    yield f"## gitops-kd plan: `{r.base}` → `{r.head}`"
    yield ""
    if r.refused:
        yield "> [!CAUTION]"
        yield "> **Merging this would be REFUSED: gitops-kd would apply nothing of it.**"
        yield ">"
        yield from (f"> - `{x.file}`: `{x.field}`: {x.reason}" for x in r.refusals)
        yield ""
    yield f"Compared with {r.against}."
    yield ""
    moving = [c for c in r.clusters if c.state == "rollout"]
    yield ("If it were not refused: " if r.refused else "") + (
        f"**{len(moving)} cluster(s) roll out, {r.replaced} pod(s) replaced** one at a time per cluster; "
        f"duration at most **{duration(r.estimate_seconds)}** (upper bound)."
    )
    yield ""
    yield "### Apps"
    yield ""
    shown = [a for a in r.apps if a.direction != "same version" or a.changes]
    if shown:
        yield "| App | File | Version | Upgrade rules |"
        yield "| --- | --- | --- | --- |"
    for a in shown:
        version = f"{a.before} → {a.after}" if a.before and a.before != a.after else f"{a.after}"
        verdict = a.verdict if a.allowed else f"**{a.verdict}**"
        yield f"| `{name(a.key)}` | `{a.file}` | {version} ({a.direction}) | {verdict} |"
    changed = [a for a in r.apps if a.changes]
    if changed:
        yield ""
        for a in changed:
            yield f"- `{name(a.key)}` changes: " + "; ".join(f"`{c}`" for c in a.changes)
    same = [f"`{name(a.key)}`" for a in r.apps if a not in shown]
    if same:
        yield ""
        yield "Unchanged: " + ", ".join(same) + "."
    yield ""
    yield "### Clusters, in wave order"
    for c in r.clusters:
        if c.state != "in-sync":
            yield ""
            yield from _cluster(c)
    quiet = [f"`{name(c.key)}`" for c in r.clusters if c.state == "in-sync"]
    if quiet:
        yield ""
        yield "Unchanged (nothing to do): " + ", ".join(quiet) + "."
    if r.notes:
        yield ""
        yield "### Left in place"
        yield ""
        yield from (f"- {n}" for n in r.notes)
    yield ""
    yield f"<sub>Durations are {UPPER_BOUND}.</sub>"


def _cluster(c: ClusterReview) -> Iterator[str]:
    yield f"#### Wave {c.wave}: `{name(c.key)}` (`{c.file}`)"
    yield ""
    if c.state == "create":
        members = ", ".join(f"{x.role} ({x.members})" for x in c.roles)
        yield f"New cluster: KubeDirector creates it with {c.app} {c.to_version}: {members}."
        return
    if c.state != "rollout":
        yield "No rollout." + (" Spec changes: " + "; ".join(f"`{x}`" for x in c.changes) if c.changes else "")
        return
    yield (f"{_change(c)}: **{c.replaced} pod(s) replaced**, one at a time, roles in this order:")
    yield ""
    yield "| # | Role | Pods replaced | postUpgrade hook | Gate |"
    yield "| --- | --- | --- | --- | --- |"
    for i, x in enumerate(c.roles, 1):
        yield f"| {i} | {x.role} | {x.replaced} of {x.members} | {'yes' if x.hook else 'no'} | {'yes' if x.gate else 'no'} |"
    yield ""
    yield from _data(c)
    if c.hook is not None:
        yield f"- Hook (postUpgrade): `{c.hook.detail}`, timeout {c.hook.timeout_seconds}s, {roles_of(c.hook)}"
    if c.gate is not None:
        yield (f"- Gate: `{c.gate.detail}` every {c.gate.period_seconds}s, timeout {c.gate.timeout_seconds}s, {roles_of(c.gate)}")
    policy = c.failure_policy or "halt"
    yield f"- Failure policy: `{policy}` ({_POLICY.get(policy, policy)})"
    yield f"- Pod ready timeout: {c.pod_ready_timeout_seconds}s"
    if c.rollback is not None:
        yield f"- Rollback: {rollback_sentence(c.rollback)}"
    for p in c.ports:
        yield f"- Service ports, role {p.role}: {port_change(p, '→')}"
    if c.changes:
        yield "- Spec changes: " + "; ".join(f"`{x}`" for x in c.changes)
    yield f"- Duration: at most {duration(c.estimate_seconds)} (upper bound)"


def _change(c: ClusterReview) -> str:
    if c.from_version is None or c.from_version == c.to_version:
        return f"{c.direction} {c.app} {c.to_version} (same version, pods on another image)"
    return f"{c.direction} {c.app} {c.from_version} → {c.to_version}"


def _cell(value: str) -> str:
    """A table cell's text: a ``|`` would end the cell."""
    return value.replace("|", "\\|")


def _data(c: ClusterReview) -> Iterator[str]:
    """One row per directory and rule, with the roles it applies to."""
    rows: dict[tuple[str, str], list[str]] = {}
    for x in c.roles:
        for d in x.dirs:
            rows.setdefault((d.directory, rule(d)), []).append(x.role)
    bare = [x.role for x in c.roles if not x.storage]
    if rows:
        yield "Data rule for every persisted directory:"
        yield ""
        yield "| Persisted directory | Data rule | Roles |"
        yield "| --- | --- | --- |"
        yield from (f"| `{d}` | {_cell(what)} | {', '.join(roles)} |" for (d, what), roles in rows.items())
        yield ""
    if bare:
        yield f"- No persistent storage (nothing kept across the upgrade): {', '.join(bare)}"
