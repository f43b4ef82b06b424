"""`gitops-kd diff`: what differs between the live cluster and Git, per object and field, like `flux diff`."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import click

from gitops_kd.cli.exits import EXIT_FINDINGS
from gitops_kd.cli.gitcreds import apply_git_credentials, git_credential_options
from gitops_kd.cli.options import cluster_options
from gitops_kd.cli.plan import read_desired
from gitops_kd.cli.run import watch_scope


@click.command("diff")
@click.option("--repo", default=".", show_default=True, help="Git URL or local path of the desired-state repository.")
@click.option("--branch", default=None, help="Branch to read (default: a local --repo's checked-out HEAD, else main).")
@click.option("--rev", default=None, help="Revision to compare with (default: see --branch).")
@cluster_options
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@git_credential_options
def command(
    repo: str,
    branch: str | None,
    rev: str | None,
    kubeconfig: str | None,
    context: str | None,
    namespace: str,
    all_namespaces: bool,
    output: str,
    ssh_key_file: str | None,
    known_hosts_file: str | None,
    git_token_file: str | None,
    git_credentials_dir: str | None,
) -> None:
    """Compare the live cluster (read only) with the commit: every object gitops-kd would create or change
    (KubeDirectorApps, KubeDirectorClusters, role StatefulSet pod templates, member Service ports) with each
    differing field's live and Git values. Like `flux diff kustomization` / `argocd app diff`.

    Exit status: 0 no differences, 1 differences or the commit is invalid or refused (printed), 2 the
    repository, the revision or the cluster cannot be read (or a usage error).
    """
    from gitops_kd.cli.plan import observe
    from gitops_kd.controller.scope import Scope, restrict
    from gitops_kd.diff import diff
    from gitops_kd.plan.planner import plan as make_plan
    from gitops_kd.review.livediff import later_service_ports, live_diff
    from gitops_kd.review.missing import missing_statefulsets

    logging.basicConfig(level=logging.WARNING)
    scope = watch_scope(namespace, all_namespaces, ())
    apply_git_credentials(ssh_key_file, known_hosts_file, git_token_file, git_credentials_dir)
    desired = read_desired(repo, branch, namespace, rev)
    observed = observe(kubeconfig, context, scope)
    scoped = restrict(desired, Scope.of(scope))
    # a suspended cluster still differs from Git: planned as if resumed (as `flux diff` of a suspended object)
    result = scoped.restrict_plan(make_plan(scoped.desired, observed, now=datetime.now(UTC), suspend=False))
    if result.refused:
        click.echo(f"commit {desired.commit[:12]} is refused; nothing of it would be applied:", err=True)
        for r in result.refusals:
            click.echo(f"  {r.describe()}", err=True)
        raise SystemExit(EXIT_FINDINGS)
    found = live_diff(result.actions, observed) + missing_statefulsets(scoped.desired, observed)
    found += later_service_ports(diff(scoped.desired, observed), observed, result.actions)
    if output == "json":
        click.echo(json.dumps({"commit": desired.commit, "differences": [d.as_dict() for d in found]}, indent=2))
    else:
        for d in found:
            note = f" ({d.note})" if d.note else ""
            if d.create:
                click.echo(f"+ {d.kind} {d.namespace}/{d.name}{note}: not in the cluster; would be created")
                continue
            click.echo(f"~ {d.kind} {d.namespace}/{d.name}{note}")
            for f in d.fields:
                click.echo(f"    {f.describe()}")
        click.echo(
            f"{len(found)} object(s) differ from commit {desired.commit[:12]}"
            if found
            else f"no differences from commit {desired.commit[:12]}"
        )
        for kept in result.kept:  # e.g. a KDApp stock KubeDirector holds while clusters use it: not a difference
            click.echo(f"note: {kept}")
    if found:
        raise SystemExit(EXIT_FINDINGS)
