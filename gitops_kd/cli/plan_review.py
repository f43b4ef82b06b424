"""`gitops-kd plan --base B --head H`: what merging H into B would do, as text, Markdown or JSON."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from gitops_kd.cli.exits import EXIT_FINDINGS
from gitops_kd.cli.revisions import desired_or_exit
from gitops_kd.controller.scope import Scope, restrict
from gitops_kd.kd.flavour import LIVE_UPGRADE
from gitops_kd.observed import ObservedState
from gitops_kd.review import Review, as_live, review
from gitops_kd.review.jsonout import as_json
from gitops_kd.review.kd_rules import on_branch
from gitops_kd.review.markdown import markdown
from gitops_kd.review.text import text
from gitops_kd.source import GitSource

FORMATS = ("text", "markdown", "json")


def render(r: Review, fmt: str) -> str:
    """The review in one of FORMATS."""
    return markdown(r) if fmt == "markdown" else as_json(r) if fmt == "json" else text(r)


def run_review(
    source: GitSource,
    repo: str,
    base: str,
    head: str,
    fmt: str,
    scope: str | frozenset[str] | None,
    live: ObservedState | None,
    wave_soak: float,
    flavour: str = "",
) -> None:
    """Print the review of ``head`` against ``live`` (None: the base revision's desired state as if it ran, on the
    KubeDirector ``flavour`` names: live-app-upgrade, else stock)."""
    before = desired_or_exit(source, repo, base, "base")
    after = desired_or_exit(source, repo, head, "head")
    scoped = restrict(after, Scope.of(scope))
    against = (
        "the live cluster (read only)"
        if live is not None
        else f"the base revision `{base}` as if it were running (no cluster was read)"
    )
    observed = live if live is not None else as_live(restrict(before, Scope.of(scope)).desired)
    if live is None and flavour == LIVE_UPGRADE:
        observed = on_branch(observed)
    result = review(
        scoped.desired, observed, now=datetime.now(UTC), base=base, against=against, head_label=head, wave_soak_seconds=wave_soak
    )
    click.echo(render(result, fmt), nl=False)
    if result.refused:
        raise SystemExit(EXIT_FINDINGS)
