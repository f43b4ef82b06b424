"""`gitops-kd status [CLUSTER]`: the health of each managed KDCluster, or of every object of one."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import click
from kubernetes.client.exceptions import ApiException
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gitops_kd.health import ClusterHealth, HealthStatus
from gitops_kd.kube.rest import RestClient
from gitops_kd.observe.fleet import collect

FAILING = (HealthStatus.DEGRADED, HealthStatus.MISSING)
_STYLE = {HealthStatus.HEALTHY: "green", HealthStatus.PROGRESSING: "cyan", HealthStatus.SUSPENDED: "yellow",
          HealthStatus.DEGRADED: "red", HealthStatus.MISSING: "red", HealthStatus.UNKNOWN: "dim"}

__all__ = ["collect", "command", "render_clusters", "render_objects"]


def _health_cell(status: HealthStatus) -> str:
    return f"[{_STYLE[status]}]{status.value}[/]"


def _version(c: ClusterHealth) -> str:
    if c.target_version and c.live_version != c.target_version:
        return f"{c.live_version or '-'} → {c.target_version}"
    return c.live_version or "-"


def render_clusters(clusters: Iterable[ClusterHealth], console: Console) -> None:
    table = Table(box=None, pad_edge=False)
    for col in ("CLUSTER", "APP", "VERSION", "PHASE", "HEALTH"):
        table.add_column(col, no_wrap=True)
    table.add_column("MESSAGE", overflow="fold")
    for c in clusters:
        table.add_row(f"{c.namespace}/{c.name}", c.app or "-", _version(c), c.phase or "-",
                      _health_cell(c.health.status), escape(c.health.message))
    console.print(table)


def render_objects(c: ClusterHealth, console: Console) -> None:
    console.print(f"{c.namespace}/{c.name}  app {c.app or '-'}  version {_version(c)}  phase {c.phase or '-'}  "
                  f"health {_health_cell(c.health.status)}", highlight=False)
    table = Table(box=None, pad_edge=False)
    for col in ("KIND", "NAME", "ROLE", "HEALTH"):
        table.add_column(col, no_wrap=True)
    table.add_column("MESSAGE", overflow="fold")
    for o in c.objects:
        table.add_row(o.kind, o.name, o.role or "-", _health_cell(o.health.status), escape(o.health.message))
    console.print(table)


@click.command("status")
@click.argument("cluster", required=False)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None)
@click.option("--context", default=None)
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("-A", "--all-namespaces", "all_namespaces", is_flag=True, help="Every namespace.")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def command(cluster: str | None, kubeconfig: str | None, context: str | None, namespace: str,
            all_namespaces: bool, output: str) -> None:
    """Show the health of each KDCluster gitops-kd manages (those with a KDRollout): app, version
    (live → target), rollout phase and the worst health of its objects with why. With CLUSTER, every
    object of that cluster (KDRollout, KDCluster, StatefulSets, Pods, Services, PVCs) with its health.

    Exit status 0 when everything shown is Healthy, Progressing, Suspended or Unknown; 1 when anything is
    Degraded or Missing, or CLUSTER does not exist.
    """
    from gitops_kd.cli.run import load_api_client

    if cluster and all_namespaces:
        raise click.UsageError("a cluster cannot be named across all namespaces (-A): use -n NAMESPACE")
    rest = RestClient(load_api_client(kubeconfig, context))
    try:
        clusters = collect(rest, None if all_namespaces else namespace, cluster)
    except ApiException as exc:
        raise click.ClickException(f"reading the cluster failed: {exc.status} {exc.reason}") from exc
    where = "any namespace" if all_namespaces else f"namespace {namespace}"
    if cluster and not clusters:
        click.echo(f"no KDRollout or KubeDirectorCluster named {cluster} in {where}", err=True)
        raise SystemExit(1)
    if output == "json":
        data: Any = clusters[0].as_dict(with_objects=True) if cluster else [c.as_dict() for c in clusters]
        click.echo(json.dumps(data, indent=2))
    elif cluster:
        render_objects(clusters[0], Console(width=200))
    elif clusters:
        render_clusters(clusters, Console(width=200))
    else:
        click.echo(f"no KDCluster managed by gitops-kd (no KDRollout) in {where}", err=True)
    if any(c.health.status in FAILING for c in clusters):
        raise SystemExit(1)
