"""`gitops-kd plan`: print the plan for a commit without touching the cluster."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import click

from gitops_kd.cli.base_rules import FLAVOURS
from gitops_kd.cli.exits import EXIT_FINDINGS, CannotRun, source_exit
from gitops_kd.cli.gitcreds import apply_git_credentials, git_credential_options
from gitops_kd.cli.kubeclient import load_api_client, probe, probe_lists
from gitops_kd.cli.options import KUBECONFIG_HELP
from gitops_kd.cli.plan_review import FORMATS, run_review
from gitops_kd.cli.revisions import planned_revision
from gitops_kd.cli.run import repo_url, watch_scope
from gitops_kd.observed import ObservedState
from gitops_kd.source import DesiredState, GitSource, SourceError
from gitops_kd.source.git_source import DEFAULT_BRANCH


@click.command("plan")
@click.option("--repo", default=".", show_default=True, help="Git URL or local path of the desired-state repository.")
@click.option("--branch", default=None, help="Branch to read (default: a local --repo's checked-out HEAD, else main).")
@click.option("--rev", default=None, help="Revision to plan (default: see --branch).")
@click.option("--base", default=None, help="Review a change: the revision merged into (e.g. origin/main).")
@click.option("--head", default=None, help="With --base: the revision to merge (default HEAD).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="With --base: text, markdown (a pull-request comment) or json.",
)
@click.option(
    "--kubedirector",
    "flavour",
    type=click.Choice(FLAVOURS),
    default=FLAVOURS[0],
    show_default=True,
    envvar="GITOPS_KD_KUBEDIRECTOR",
    help="With --base and no --kubeconfig: the KubeDirector the target cluster runs: stock (bluek8s master), or "
    "live-app-upgrade (its branch, where a spec.app switch is its native upgrade, reviewed with its one-way warning); "
    "with --kubeconfig the cluster's own KubeDirector is read.",
)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help=KUBECONFIG_HELP)
@click.option("--context", default=None, help="Kubeconfig context to use (default: its current context).")
@click.option(
    "-n",
    "--namespace",
    default="default",
    show_default=True,
    help="Default namespace for manifests without one; also the namespace read (as for `run`).",
)
@click.option("-A", "--all-namespaces", is_flag=True, help="As for `gitops-kd run`: read and plan every namespace.")
@click.option(
    "--watch-namespace",
    "watch_namespaces",
    multiple=True,
    metavar="NS",
    help="As for `gitops-kd run`: plan as the shard of these namespaces (repeatable).",
)
@click.option("--offline", is_flag=True, help="Plan against an empty cluster instead of reading the live one.")
@click.option("--wave-soak", type=float, default=0.0, show_default=True, help="As for `gitops-kd run`.")
@click.option("--prune", is_flag=True, help="As for `gitops-kd run`: plan deleting what Git no longer has.")
@git_credential_options
def command(
    repo: str,
    branch: str | None,
    rev: str | None,
    base: str | None,
    head: str | None,
    fmt: str,
    flavour: str,
    kubeconfig: str | None,
    context: str | None,
    namespace: str,
    all_namespaces: bool,
    watch_namespaces: tuple[str, ...],
    offline: bool,
    wave_soak: float,
    prune: bool,
    ssh_key_file: str | None,
    known_hosts_file: str | None,
    git_token_file: str | None,
    git_credentials_dir: str | None,
) -> None:
    """Read the cluster (read-only) and print what `run` would do for the commit, in order.

    With --base (and --head): what merging HEAD would do, per app and cluster; against the live cluster when
    --kubeconfig is given (read only), else against the base revision's desired state as if it were running.

    Exit status: 0 with a plan (or in sync), 1 when the commit is invalid or refused, 2 when the repository, a
    revision or the cluster cannot be read (or a usage error).
    """
    from gitops_kd.controller.scope import Scope, restrict
    from gitops_kd.diff import diff
    from gitops_kd.plan.planner import plan as make_plan
    from gitops_kd.plan.result import IN_SYNC
    from gitops_kd.review.sequence import sequence_lines, sequences
    from gitops_kd.review.values import plan_text

    logging.basicConfig(level=logging.WARNING)
    scope = watch_scope(namespace, all_namespaces, watch_namespaces)
    apply_git_credentials(ssh_key_file, known_hosts_file, git_token_file, git_credentials_dir)
    if base is not None or head is not None:
        if base is None or rev is not None or offline or prune:
            raise click.UsageError("--head needs --base; --rev, --offline and --prune do not go with --base")
        with GitSource(repo_url(repo), branch or DEFAULT_BRANCH, default_namespace=namespace) as source:
            live = observe(kubeconfig, context, scope) if kubeconfig else None
            run_review(source, repo, base, head or "HEAD", fmt, scope, live, wave_soak, flavour)
        return
    desired = read_desired(repo, branch, namespace, rev)
    observed = ObservedState() if offline else observe(kubeconfig, context, scope)
    scoped = restrict(desired, Scope.of(scope))
    result = scoped.restrict_plan(
        make_plan(scoped.desired, observed, now=datetime.now(UTC), wave_soak_seconds=wave_soak, prune=prune)
    )
    where = "an empty cluster" if offline else scoped.scope.describe()
    click.echo(f"plan for commit {desired.commit[:12]} against {where}:")
    changes = diff(scoped.desired, observed)
    text = plan_text(result, observed)
    if not result.actions and (changes.apps or changes.clusters):  # waiting changes are not "in sync"
        text = text.replace(IN_SYNC, "no action now: the changes below are held (see the notes)", 1)
    click.echo(text)
    if not result.refused:
        if changes.apps or changes.clusters:
            click.echo("changes (old -> new):")
            click.echo("\n".join(f"  {line}" for line in changes.describe().splitlines()))
        for line in sequence_lines(sequences(scoped.desired, observed, now=datetime.now(UTC)), wave_soak):
            click.echo(line)
    if result.refused:
        raise SystemExit(EXIT_FINDINGS)


def observe(kubeconfig: str | None, context: str | None, namespace: str | frozenset[str] | None) -> ObservedState:
    from gitops_kd.observe.collector import KINDS, Collector, watched_namespaces

    api_client = load_api_client(kubeconfig, context)
    probe(api_client)
    namespaces = watched_namespaces(namespace)
    listed: list[str | None] = [*sorted(namespaces)] if namespaces is not None else [None]
    probe_lists(api_client, [(api, plural, ns) for _, api, plural, _ in KINDS for ns in listed])
    collector = Collector(api_client, namespace=namespace)
    collector.start()
    try:
        if not collector.wait_synced(30):
            raise CannotRun("could not list the cluster's objects within 30s")
        return collector.snapshot()
    finally:
        collector.stop()


def read_desired(repo: str, branch: str | None, namespace: str, rev: str | None) -> DesiredState:
    """The desired state at the revision revisions.planned_revision picks; a commit the source refuses is printed
    with its errors and exits (exits.source_exit)."""
    with GitSource(repo_url(repo), branch or DEFAULT_BRANCH, default_namespace=namespace) as source:
        try:
            source.fetch()
            return source.desired_at(planned_revision(source, repo, branch, rev))
        except SourceError as exc:
            click.echo(f"error: {exc.message}", err=True)
            for err in exc.errors:
                click.echo(f"  {err}", err=True)
            raise SystemExit(source_exit(exc.errors)) from exc
