"""`gitops-kd status [CLUSTER]`: the health of each managed KDCluster, or of every object of one."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import click
from kubernetes.client.exceptions import ApiException
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL
from gitops_kd.health import ClusterHealth, HealthStatus, cluster_health
from gitops_kd.kd import layout
from gitops_kd.kube.rest import RestClient

ROLLOUT_API, ROLLOUTS = ROLLOUT_API_VERSION, ROLLOUT_PLURAL
MEMBER_KINDS = (("statefulsets", "apps/v1", "statefulsets"), ("pods", "v1", "pods"),
                ("services", "v1", "services"), ("pvcs", "v1", "persistentvolumeclaims"))
FAILING = (HealthStatus.DEGRADED, HealthStatus.MISSING)
_STYLE = {HealthStatus.HEALTHY: "green", HealthStatus.PROGRESSING: "cyan", HealthStatus.SUSPENDED: "yellow",
          HealthStatus.DEGRADED: "red", HealthStatus.MISSING: "red", HealthStatus.UNKNOWN: "dim"}

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, cluster name)


def _key(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def _members_by_cluster(rest: RestClient, namespace: str | None, selector: str) -> dict[str, dict[Key, list[Obj]]]:
    """For each member kind, its objects labelled with a KDCluster, grouped by (namespace, cluster)."""
    out: dict[str, dict[Key, list[Obj]]] = {}
    for field, api_version, plural in MEMBER_KINDS:
        grouped: dict[Key, list[Obj]] = defaultdict(list)
        for obj in rest.list(api_version, plural, namespace, label_selector=selector).get("items") or []:
            meta = obj.get("metadata") or {}
            grouped[(meta.get("namespace") or "", (meta.get("labels") or {}).get(layout.CLUSTER_LABEL, ""))].append(obj)
        out[field] = grouped
    return out


def _unlabelled_pvcs(rest: RestClient, kdcluster: Obj | None, found: list[Obj]) -> list[Obj]:
    """PVCs KubeDirector's status names that the label selector did not return (fetched one by one)."""
    namespace, _ = _key(kdcluster or {})
    have = {(o.get("metadata") or {}).get("name") for o in found}
    names = [m.get("pvc") for r in ((kdcluster or {}).get("status") or {}).get("roles") or []
             for m in r.get("members") or [] if m.get("pvc") and m.get("pvc") not in have]
    return [obj for n in names if (obj := rest.get_or_none("v1", "persistentvolumeclaims", namespace, n)) is not None]


def collect(rest: RestClient, namespace: str | None, name: str | None = None) -> list[ClusterHealth]:
    """The health of each managed KDCluster in `namespace` (None: all), or of the one named `name`
    (also when it has no KDRollout). A fixed number of LIST calls, whatever the number of clusters."""
    selector = f"{layout.CLUSTER_LABEL}={name}" if name else layout.CLUSTER_LABEL
    if name:
        rollout = rest.get_or_none(ROLLOUT_API, ROLLOUTS, namespace, name)
        rollouts = {_key(rollout): rollout} if rollout else {}
        found = rest.get_or_none(layout.API_VERSION, layout.KDCLUSTER_PLURAL, namespace, name)
        kdclusters = {_key(found): found} if found else {}
    else:
        rollouts = {_key(o): o for o in rest.list(ROLLOUT_API, ROLLOUTS, namespace).get("items") or []}
        kdclusters = {_key(o): o for o in
                      rest.list(layout.API_VERSION, layout.KDCLUSTER_PLURAL, namespace).get("items") or []}
    keys = sorted(set(rollouts) | (set(kdclusters) if name else set()))
    members = _members_by_cluster(rest, namespace, selector)
    out = []
    for key in keys:
        objects = {field: members[field].get(key, []) for field in members}
        objects["pvcs"] = objects["pvcs"] + _unlabelled_pvcs(rest, kdclusters.get(key), objects["pvcs"])
        out.append(cluster_health(rollouts.get(key), kdclusters.get(key), **objects))
    return out


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
