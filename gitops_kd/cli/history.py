"""`gitops-kd history APP`: each version applied to each cluster of APP, from the KDRollouts' status.history."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from gitops_kd.history.entries import HistoryEntry
from gitops_kd.history.reader import app_history

_STYLE = {"Succeeded": "green", "Stalled": "red", "Reverted": "yellow", "InProgress": "cyan", "Superseded": "dim"}


def render_table(app: str, entries: list[HistoryEntry], console: Console) -> None:
    table = Table(title=f"history of app {app}", title_justify="left")
    for col in ("CLUSTER", "VERSION", "FROM", "COMMIT", "STARTED", "FINISHED", "RESULT"):
        table.add_column(col, no_wrap=True)
    for e in entries:
        result = e.result + (f" ({e.reason})" if e.reason else "") + \
            (f" by {e.revert_commit[:12]}" if e.revert_commit else "")
        table.add_row(f"{e.namespace}/{e.cluster}", e.version, e.from_version or "-", (e.commit or "-")[:12],
                      e.started or "-", e.finished or "-", f"[{_STYLE.get(e.result, 'white')}]{result}[/]")
    console.print(table)


@click.command("history")
@click.argument("app")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None)
@click.option("--context", default=None)
@click.option("--namespace", default="default", show_default=True)
@click.option("--all-namespaces", "-A", "all_namespaces", is_flag=True, help="Every namespace.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def command(app: str, kubeconfig: str | None, context: str | None, namespace: str, all_namespaces: bool,
            output: str) -> None:
    """List each version applied to each cluster of APP: version, from version, commit, started, finished and
    result (Succeeded / Stalled / Reverted, InProgress for the rollout under way), oldest first.

    Exit status 1 when no cluster of APP is managed by gitops-kd there.
    """
    from gitops_kd.cli.run import load_api_client
    from gitops_kd.kube.rest import RestClient

    rest = RestClient(load_api_client(kubeconfig, context))
    entries, rollouts = app_history(rest, app, None if all_namespaces else namespace)
    if output == "json":
        click.echo(json.dumps([e.as_dict() for e in entries], indent=2))
    else:
        render_table(app, entries, Console(width=200))
    if rollouts == 0:
        where = "any namespace" if all_namespaces else f"namespace {namespace}"
        click.echo(f"no KDRollout of app {app} in {where}", err=True)
        raise SystemExit(1)
