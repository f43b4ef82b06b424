"""`gitops-kd status [CLUSTER]`: applied revision and branch head, then SYNC and HEALTH of each managed KDCluster
(or every object of one)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import click
from kubernetes.client.exceptions import ApiException
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gitops_kd.cli.exits import EXIT_FINDINGS, CannotRun
from gitops_kd.cli.options import cluster_options
from gitops_kd.cli.sources import render_sources
from gitops_kd.health import ClusterHealth, HealthStatus
from gitops_kd.observe.fleet import collect, fetch, healths
from gitops_kd.observe.kdflavour import detect
from gitops_kd.observe.sources import read_sources
from gitops_kd.status.sync import (
    FAILING_SYNC,
    OUT_OF_SYNC,
    REFUSED,
    SUSPENDED,
    SYNCED,
    Sync,
    cluster_sync,
    source_for,
)
from kubeplumb.rest import RestClient

FAILING = (HealthStatus.DEGRADED, HealthStatus.MISSING)
_STYLE = {
    HealthStatus.HEALTHY: "green",
    HealthStatus.PROGRESSING: "cyan",
    HealthStatus.SUSPENDED: "yellow",
    HealthStatus.DEGRADED: "red",
    HealthStatus.MISSING: "red",
    HealthStatus.UNKNOWN: "dim",
}

_SYNC_STYLE = {SYNCED: "green", OUT_OF_SYNC: "cyan", REFUSED: "red", SUSPENDED: "yellow"}

__all__ = ["collect", "command", "render_clusters", "render_objects", "render_unreachable"]


def _health_cell(status: HealthStatus) -> str:
    return f"[{_STYLE[status]}]{status.value}[/]"


def _version(c: ClusterHealth) -> str:
    if c.target_version and c.live_version != c.target_version:
        return f"{c.live_version or '-'} → {c.target_version}"
    return c.live_version or "-"


def _sync_cell(sync: Sync) -> str:
    return f"[{_SYNC_STYLE.get(sync.status, 'white')}]{sync.status}[/]"


def _message(c: ClusterHealth, sync: Sync) -> str:
    """The sync's reason when not Synced, then the health's (once when one repeats the other: a suspended cluster)."""
    said = sync.message if sync.status != SYNCED else ""
    health = c.health.message
    if not said or not health:
        return said or health
    return health if health.startswith(said) else said if said.startswith(health) else f"{said}; {health}"


def render_clusters(clusters: Iterable[tuple[ClusterHealth, Sync]], console: Console) -> None:
    table = Table(box=None, pad_edge=False)
    for col in ("CLUSTER", "APP", "VERSION", "PHASE", "SYNC", "HEALTH"):
        table.add_column(col, no_wrap=True)
    table.add_column("MESSAGE", overflow="fold")
    for c, sync in clusters:
        table.add_row(
            f"{c.namespace}/{c.name}",
            c.app or "-",
            _version(c),
            c.phase or "-",
            _sync_cell(sync),
            _health_cell(c.health.status),
            escape(_message(c, sync)),
        )
    console.print(table)


def render_objects(c: ClusterHealth, sync: Sync, console: Console) -> None:
    console.print(
        f"{c.namespace}/{c.name}  app {c.app or '-'}  version {_version(c)}  phase {c.phase or '-'}  "
        f"sync {_sync_cell(sync)}  health {_health_cell(c.health.status)}",
        highlight=False,
    )
    if sync.status != SYNCED and sync.message:
        console.print(f"  {escape(sync.message)}", highlight=False)
    table = Table(box=None, pad_edge=False)
    for col in ("KIND", "NAME", "ROLE", "STAGE", "HEALTH"):
        table.add_column(col, no_wrap=True)
    table.add_column("MESSAGE", overflow="fold")
    for o in c.objects:
        table.add_row(o.kind, o.name, o.role or "-", o.stage or "-", _health_cell(o.health.status), escape(o.health.message))
    console.print(table)
    render_unreachable(c, console)


def render_unreachable(c: ClusterHealth, console: Console) -> None:
    """The members a client cannot reach through their own Service, one line each; one line saying none."""
    if not c.unreachable:
        console.print("unreachable members: none (every running member's Service targets the ports its pod serves)")
        return
    console.print(f"[red]unreachable members ({len(c.unreachable)})[/]:", highlight=False)
    for u in c.unreachable:
        console.print(f"  {escape(u.describe())}", highlight=False)


@click.command("status")
@click.argument("cluster", required=False)
@cluster_options
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def command(
    cluster: str | None, kubeconfig: str | None, context: str | None, namespace: str, all_namespaces: bool, output: str
) -> None:
    """Show what Git revision is applied and what each KDCluster gitops-kd manages (those with a KDRollout)
    looks like against it, like `flux get kustomizations` / `argocd app get`.

    First which KubeDirector is installed (its CRDs' schemas: stock, or the live-app-upgrade branch), then the
    GitOpsKDSource of each controller: the applied revision (sha and subject), the branch head
    (the newest commit evaluated) and, when the head was refused, why. Then per cluster: app, version
    (live → target), rollout phase, SYNC (Synced; OutOfSync while a rollout runs or stalls; Refused when the
    branch head was refused and the cluster stays at the applied revision; Suspended by `gitops-kd suspend`)
    and HEALTH, the worst of its objects (a pod the rollout is replacing is Progressing). With CLUSTER,
    every object of that cluster (KDRollout, KDCluster, StatefulSets, Pods, Services, PVCs) with its health,
    then the members unreachable through their own Service (it targets other ports than the member's running
    pod declares; such a Service is Degraded); `-o json` lists them under "unreachable" ([] when none).

    Exit status: 0 when nothing shown is Degraded, Missing or Refused and no source is stalled (Synced,
    OutOfSync, Progressing, Suspended and Unknown are 0); 1 when something is Degraded or Missing, a head is
    refused, Git is unreadable, the record is untrusted, or CLUSTER does not exist; 2 when the cluster cannot be
    read, or on a usage error.
    """
    from gitops_kd.cli.kubeclient import load_api_client

    if cluster and all_namespaces:
        raise click.UsageError("a cluster cannot be named across all namespaces (-A): use -n NAMESPACE")
    rest = RestClient(load_api_client(kubeconfig, context))
    try:
        fleet = fetch(rest, None if all_namespaces else namespace, cluster)
        sources, note = read_sources(rest, namespace)
    except ApiException as exc:
        raise CannotRun(f"reading the cluster failed: {exc.status} {exc.reason}") from exc
    clusters = healths(fleet)
    matched = [(c, ro, source_for(ro, sources)) for c, ro in ((c, fleet.rollouts.get((c.namespace, c.name))) for c in clusters)]
    rows = [(c, cluster_sync(ro, src.record if src else None)) for c, ro, src in matched]
    where = "any namespace" if all_namespaces else f"namespace {namespace}"
    if cluster and not clusters:
        click.echo(f"no KDRollout or KubeDirectorCluster named {cluster} in {where}", err=True)
        raise SystemExit(EXIT_FINDINGS)
    console = Console(width=200, soft_wrap=False)
    if output == "json":
        data: Any = [
            {**c.as_dict(with_objects=bool(cluster)), "sync": sync.as_dict(), "source": src.as_dict() if src else None}
            for (c, sync), (_c, _r, src) in zip(rows, matched)
        ]
        click.echo(json.dumps(data[0] if cluster else data, indent=2))
    else:
        click.echo(f"KubeDirector: {detect(rest).describe()}")
        if sources:
            render_sources(sources, console)
            console.print()
        elif note:
            click.echo(note, err=True)
        if cluster:
            render_objects(*rows[0], console)
        elif rows:
            render_clusters(rows, console)
        else:
            click.echo(f"no KDCluster managed by gitops-kd (no KDRollout) in {where}", err=True)
    if any(c.health.status in FAILING or sync.status in FAILING_SYNC for c, sync in rows) or any(s.failing for s in sources):
        raise SystemExit(EXIT_FINDINGS)
