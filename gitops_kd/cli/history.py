"""`gitops-kd history APP`: each version applied to each cluster of APP, from the KDRollouts' status.history."""

from __future__ import annotations

import json
from datetime import datetime

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gitops_kd.cli.exits import EXIT_FINDINGS
from gitops_kd.cli.options import cluster_options
from gitops_kd.history.entries import (
    DEPLOYED,
    IN_PROGRESS,
    REVERTED,
    STALLED,
    SUCCEEDED,
    SUPERSEDED,
    HistoryEntry,
)

_STYLE = {SUCCEEDED: "green", DEPLOYED: "green", STALLED: "red", REVERTED: "yellow", IN_PROGRESS: "cyan", SUPERSEDED: "dim"}


def duration(started: str | None, finished: str | None) -> str:
    """finished - started as 1h2m3s / 2m3s / 3s; "-" when either is unknown."""
    if not started or not finished:
        return "-"
    try:
        seconds = int(
            (
                datetime.fromisoformat(finished.replace("Z", "+00:00")) - datetime.fromisoformat(started.replace("Z", "+00:00"))
            ).total_seconds()
        )
    except ValueError:
        return "-"
    hours, rest = divmod(max(seconds, 0), 3600)
    minutes, secs = divmod(rest, 60)
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if hours or minutes else "") + f"{secs}s"


def render_table(entries: list[HistoryEntry], subjects: dict[str, str], console: Console) -> None:
    """One table in `gitops-kd status`'s style: no box, upper-case headers."""
    table = Table(box=None, pad_edge=False)
    for col in ("CLUSTER", "APP", "VERSION", "FROM", "COMMIT", "STARTED", "DURATION", "RESULT"):
        table.add_column(col, no_wrap=True)
    table.add_column("SUBJECT", overflow="fold")
    for e in entries:
        result = e.result + (f" ({e.reason})" if e.reason else "") + (f" by {e.revert_commit[:12]}" if e.revert_commit else "")
        table.add_row(
            f"{e.namespace}/{e.cluster}",
            e.app,
            e.version,
            e.from_version or "-",
            (e.commit or "-")[:12],
            e.started or "-",
            duration(e.started, e.finished),
            f"[{_STYLE.get(e.result, 'white')}]{escape(result)}[/]",
            escape(subjects.get(e.commit or "", "") or "-"),
        )
    console.print(table)


def _subjects(rest: object, entries: list[HistoryEntry], repo: str | None, namespace: str) -> dict[str, str]:
    """Commit subjects: those the KDRollouts recorded with each attempt, the GitOpsKDSources' applied commit's, and
    with --repo (a clone or URL) every commit's from Git."""
    from gitops_kd.observe.sources import read_sources

    commits = {e.commit for e in entries if e.commit}
    found: dict[str, str] = {e.commit: e.subject for e in entries if e.commit and e.subject}
    sources, _note = read_sources(rest, namespace)  # type: ignore[arg-type]
    for s in sources:
        if s.record.applied in commits and s.record.applied_subject:
            found[s.record.applied] = s.record.applied_subject
    if repo is not None and commits:
        from gitops_kd.cli.run import repo_url
        from gitops_kd.source import GitSource, SourceError

        try:
            with GitSource(repo_url(repo), "main") as source:
                source.fetch()
                for commit in commits:
                    subject = source.commit_subject(commit)
                    if subject:
                        found[commit] = subject
        except SourceError as exc:
            click.echo(f"warning: --repo {repo}: {exc.message}; subjects from the cluster only", err=True)
    return found


@click.command("history")
@click.argument("app")
@cluster_options
@click.option(
    "--repo",
    default=None,
    help="Git repository (local path or URL) to read commit subjects from "
    "(default: those recorded in the cluster with each rollout, and the applied commit's).",
)
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def command(
    app: str, kubeconfig: str | None, context: str | None, namespace: str, all_namespaces: bool, repo: str | None, output: str
) -> None:
    """List each version applied to each cluster that runs or ran APP (a cluster's history stays under the app it
    left when spec.app switches to another app), oldest first, like `argocd app history`: its app, version,
    from version, commit, started, duration, result (Deployed for the first version gitops-kd recorded,
    Succeeded, Stalled, Reverted, Superseded, InProgress for the rollout under way) and the commit subject.

    Exit status 1 when no cluster of APP is managed by gitops-kd there; 2 on a usage error.
    """
    from gitops_kd.cli.kubeclient import load_api_client
    from gitops_kd.history.reader import app_history
    from kubeplumb.rest import RestClient

    rest = RestClient(load_api_client(kubeconfig, context))
    entries, rollouts = app_history(rest, app, None if all_namespaces else namespace)
    subjects = _subjects(rest, entries, repo, namespace)
    if output == "json":
        click.echo(
            json.dumps(
                [
                    {**e.as_dict(), "subject": subjects.get(e.commit or "") or None, "duration": duration(e.started, e.finished)}
                    for e in entries
                ],
                indent=2,
            )
        )
    else:
        render_table(entries, subjects, Console(width=200, soft_wrap=False))
    if rollouts == 0:
        where = "any namespace" if all_namespaces else f"namespace {namespace}"
        click.echo(f"no KDRollout of app {app} in {where}", err=True)
        raise SystemExit(EXIT_FINDINGS)
