"""`gitops-kd suspend` / `gitops-kd resume`: pause or go on with clusters, recorded on their KDRollouts.

Like `flux suspend kustomization`: the flag lives in the cluster (KDRollout spec.suspend), so every replica
and every restart honours it. A suspended cluster's running step finishes; then nothing more is done for it
(no pod replaced, no drift reverted) until it is resumed.
"""

from __future__ import annotations

from typing import Any

import click
from kubernetes.client.exceptions import ApiException

from gitops_kd.cli.exits import NotFound
from gitops_kd.cli.options import KUBECONFIG_HELP
from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL


def _targets(rest: Any, clusters: tuple[str, ...], app: str | None, namespace: str | None) -> list[dict[str, Any]]:
    """The KDRollouts named (by cluster) or of ``app``; ClickException naming what is missing."""
    items = rest.list(ROLLOUT_API_VERSION, ROLLOUT_PLURAL, namespace)["items"]
    if app is not None:
        found = [r for r in items if (r.get("spec") or {}).get("app") == app]
        if not found:
            raise NotFound(f"no KDRollout of app {app} in {namespace or 'any namespace'}")
        return found
    by_name = {r["metadata"]["name"]: r for r in items}
    missing = [c for c in clusters if c not in by_name]
    if missing:
        raise NotFound(
            f"no KDRollout for cluster(s) {', '.join(missing)} in namespace {namespace} "
            f"(gitops-kd manages a cluster once it has applied it)"
        )
    return [by_name[c] for c in clusters]


def _set(
    suspend: bool,
    clusters: tuple[str, ...],
    app: str | None,
    kubeconfig: str | None,
    context: str | None,
    namespace: str,
    all_namespaces: bool,
) -> None:
    from gitops_kd.cli.kubeclient import api_failed, load_api_client
    from kubeplumb.rest import RestClient

    if bool(clusters) == bool(app):
        raise click.UsageError("name one or more CLUSTERs, or --app APP")
    if clusters and all_namespaces:
        raise click.UsageError("clusters are named in one namespace: use -n NAMESPACE, not -A")
    rest = RestClient(load_api_client(kubeconfig, context))
    verb = "suspended" if suspend else "resumed"
    try:
        for ro in _targets(rest, clusters, app, None if all_namespaces else namespace):
            meta = ro["metadata"]
            rest.patch(
                ROLLOUT_API_VERSION,
                ROLLOUT_PLURAL,
                meta["namespace"],
                meta["name"],
                {"spec": {"suspend": True if suspend else None}},
            )
            click.echo(f"kdrollout {meta['namespace']}/{meta['name']} {verb}")
    except ApiException as exc:
        raise api_failed(exc) from exc


def _options(fn: Any) -> Any:
    for option in reversed(
        (
            click.argument("clusters", nargs=-1),
            click.option("--app", default=None, help="Every cluster of this app instead of named clusters."),
            click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help=KUBECONFIG_HELP),
            click.option("--context", default=None, help="Kubeconfig context to use (default: its current context)."),
            click.option("-n", "--namespace", default="default", show_default=True, help="Namespace of the clusters."),
            click.option(
                "-A", "--all-namespaces", "all_namespaces", is_flag=True, help="With --app: its clusters in every namespace."
            ),
        )
    ):
        fn = option(fn)
    return fn


@click.command("suspend")
@_options
def suspend(
    clusters: tuple[str, ...], app: str | None, kubeconfig: str | None, context: str | None, namespace: str, all_namespaces: bool
) -> None:
    """Pause CLUSTERs (or every cluster of --app): the running step finishes, then nothing more is done for them
    (no pod replaced, no drift reverted) until `gitops-kd resume`. Recorded on each KDRollout (spec.suspend),
    so every replica and restart honours it; `gitops-kd status` shows them Suspended. Flux: `flux suspend`."""
    _set(True, clusters, app, kubeconfig, context, namespace, all_namespaces)


@click.command("resume")
@_options
def resume(
    clusters: tuple[str, ...], app: str | None, kubeconfig: str | None, context: str | None, namespace: str, all_namespaces: bool
) -> None:
    """Go on with CLUSTERs (or every cluster of --app) paused by `gitops-kd suspend`. Flux: `flux resume`."""
    _set(False, clusters, app, kubeconfig, context, namespace, all_namespaces)
