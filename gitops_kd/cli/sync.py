"""`gitops-kd sync`: ask the running controller to poll Git now, like `flux reconcile source git`."""

from __future__ import annotations

import time

import click
from kubernetes.client.exceptions import ApiException

from gitops_kd.cli.exits import EXIT_FINDINGS, CannotRun, NotFound
from gitops_kd.cli.options import kubeconfig_options
from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.controller.pollrequest import request_poll
from gitops_kd.status.source import PLURAL, SHORT_SHA
from gitops_kd.status.sync import NamedSource, refusal_lines


@click.command("sync")
@click.argument("source", default="gitops-kd")
@kubeconfig_options
@click.option(
    "-n",
    "--namespace",
    default="gitops-kd-system",
    show_default=True,
    help="Namespace of the controller (and of its GitOpsKDSource).",
)
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds to wait for the poll.")
@click.option("--no-wait", is_flag=True, help="Only ask; do not wait for the poll.")
def command(source: str, kubeconfig: str | None, context: str | None, namespace: str, timeout: float, no_wait: bool) -> None:
    """Poll Git now instead of at the next interval: sets the annotation reconcile.gitops-kd.io/requestedAt on
    the controller's GitOpsKDSource SOURCE (named after its Lease, default gitops-kd), which the replica holding
    the Lease notices within seconds; then waits until status.lastHandledReconcileAt shows the poll is done and
    prints the branch head and the applied revision. Like `flux reconcile source git NAME`; needs only RBAC
    `get` and `patch` on that GitOpsKDSource (no network path to the controller; docs/operations.md says why).

    Exit status 0 when the poll is done and the head is not refused, 1 when the head is refused or Git cannot
    be read or the GitOpsKDSource does not exist, 2 when the poll did not finish within --timeout, the cluster
    cannot be read, or a usage error.
    """
    from gitops_kd.cli.kubeclient import api_failed, load_api_client
    from kubeplumb.rest import RestClient

    rest = RestClient(load_api_client(kubeconfig, context))
    try:
        before = NamedSource.from_object(rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, namespace, source) or {}).record.applied
        requested = request_poll(rest, namespace, source)
    except ApiException as exc:
        if exc.status == 404:
            raise NotFound(
                f"no GitOpsKDSource {namespace}/{source}: is the controller running there? (`kubectl get kdsrc -A`)"
            ) from exc
        raise api_failed(exc) from exc
    click.echo(f"► sync requested on gitopskdsource {namespace}/{source} at {requested}")
    if no_wait:
        return
    deadline = time.monotonic() + timeout
    while True:
        obj = rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, namespace, source) or {}
        found = NamedSource.from_object(obj)
        if found.record.handled == requested:
            break
        if time.monotonic() > deadline:
            raise CannotRun(
                f"the controller did not poll within {timeout:g}s (is it running, and does one replica hold the Lease {source}?)"
            )
        time.sleep(0.5)
    r = found.record
    click.echo(
        f"✔ polled {r.url} ({r.branch}): head {r.attempted[:SHORT_SHA] or '-'}, applied "
        f"{r.applied[:SHORT_SHA] or '-'}" + (f" {r.applied_subject}" if r.applied_subject else "")
    )
    if r.applied and r.applied != before:
        click.echo(
            f"✔ new revision {r.applied[:SHORT_SHA]} accepted (was {before[:SHORT_SHA] or '-'}); the clusters' "
            f"rollouts follow: `gitops-kd status -A`"
        )
    lines = refusal_lines(r)
    if lines:
        click.echo(f"✗ head {r.attempted[:SHORT_SHA]} refused:", err=True)
        for line in lines:
            click.echo(f"  {line}", err=True)
    if lines or found.failing:
        if not lines:
            click.echo(f"✗ {found.reason}: {found.message}", err=True)
        raise SystemExit(EXIT_FINDINGS)
