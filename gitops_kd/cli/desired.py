"""`gitops-kd desired`: show the desired state of a Git repo at a revision, or diff two revisions."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import click

from gitops_kd.cli.exits import source_exit
from gitops_kd.source import DesiredState, GitSource, Key, SourceError
from gitops_kd.spec.model import KDApp, KDCluster


def _repo_url(repo: str) -> str:
    """A local path becomes absolute (git runs inside the cache dir); anything else is a git URL."""
    return str(Path(repo).resolve()) if os.path.exists(repo) else repo


def _name(key: Key, default_namespace: str) -> str:
    namespace, name = key
    return name if namespace == default_namespace else f"{namespace}/{name}"


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def _fail(exc: SourceError) -> None:
    click.echo(f"error: {exc.message}", err=True)
    for err in exc.errors:
        click.echo(f"  {err}", err=True)
    raise SystemExit(source_exit(exc.errors))


def _show(state: DesiredState) -> Iterable[str]:
    yield f"commit {state.commit}"
    yield ""
    yield f"Apps ({len(state.apps)}):"
    rows: list[tuple[str, ...]] = [("NAMESPACE", "NAME", "VERSION", "FILE")]
    rows += [(k[0], k[1], str(a.version), str(a.source)) for k, a in state.apps.items()]
    yield from ("  " + line for line in _columns(rows)) if state.apps else ["  (none)"]
    yield ""
    yield f"Clusters ({len(state.clusters)}):"
    rows = [("NAMESPACE", "NAME", "APP", "WAVE", "FILE")]
    rows += [(k[0], k[1], c.app, str(c.wave), str(c.source)) for k, c in state.clusters.items()]
    yield from ("  " + line for line in _columns(rows)) if state.clusters else ["  (none)"]


def _fields(before: KDApp | KDCluster, after: KDApp | KDCluster) -> list[str]:
    """Each spec field that differs between the two revisions, `path: old -> new` (as `gitops-kd plan` shows)."""
    from gitops_kd.review.livediff import field_diffs
    from gitops_kd.review.values import PLAN_VALUE

    return [f"  {f.describe(PLAN_VALUE)}" for f in field_diffs(before.body.get("spec"), after.body.get("spec"), "spec")]


def _version_lines(old: DesiredState, new: DesiredState, changed: Iterable[Key], ns: str) -> list[str]:
    lines = []
    for key in sorted(changed):
        before, after = old.apps.get(key), new.apps.get(key)
        label = _name(key, ns)
        if before is None and after is not None:
            lines.append(f"{label}: (new) -> {after.version}")
        elif after is None and before is not None:
            lines.append(f"{label}: {before.version} -> (removed)")
        elif before is not None and after is not None and before.version != after.version:
            lines.append(f"{label}: {before.version} -> {after.version}")
            lines += _fields(before, after)
        elif before is not None and after is not None:
            lines.append(f"{label}: {after.version} (spec changed, same version)")
            lines += _fields(before, after)
    return lines


def _cluster_lines(old: DesiredState, new: DesiredState, changed: Iterable[Key], ns: str) -> list[str]:
    lines = []
    for key in sorted(changed):
        before, after = old.clusters.get(key), new.clusters.get(key)
        label = _name(key, ns)
        if before is None and after is not None:
            lines.append(f"{label}: (new) app {after.app}")
        elif after is None and before is not None:
            lines.append(f"{label}: (removed) app {before.app}")
        elif before is not None and after is not None:
            lines.append(
                f"{label}: app {before.app} -> {after.app}"
                if before.app != after.app
                else f"{label}: app {after.app} (spec changed)"
            )
            lines += _fields(before, after)
    return lines


_repo_arg = click.argument("repo")
_branch_opt = click.option("--branch", default="main", show_default=True, help="Branch to follow; HEAD means its tip.")
_ns_opt = click.option(
    "--default-namespace", "namespace", default="default", show_default=True, help="Namespace for specs that name none."
)


@click.group("desired")
def command() -> None:
    """Inspect the desired state a Git repo of KDApps and KDClusters declares."""


@command.command("show")
@_repo_arg
@click.option("--rev", default="HEAD", show_default=True, help="Commit, tag or branch to read.")
@_branch_opt
@_ns_opt
def show(repo: str, rev: str, branch: str, namespace: str) -> None:
    """Print the apps (with versions) and clusters (with their app) declared at REV of REPO."""
    with GitSource(_repo_url(repo), branch, default_namespace=namespace) as source:
        try:
            state = source.desired_at(rev)
        except SourceError as exc:
            _fail(exc)
            return
        for line in _show(state):
            click.echo(line)


@command.command("diff")
@_repo_arg
@click.argument("old")
@click.argument("new")
@_branch_opt
@_ns_opt
def diff(repo: str, old: str, new: str, branch: str, namespace: str) -> None:
    """Print the change set from OLD to NEW of REPO, the per-app version changes and every spec field changed
    (old -> new)."""
    with GitSource(_repo_url(repo), branch, default_namespace=namespace) as source:
        try:
            before = source.desired_at(old)
            after = source.desired_at(new)
            changes = source.changes_between(old, new)
        except SourceError as exc:
            _fail(exc)
            return
        click.echo(f"{before.commit[:12]} -> {after.commit[:12]}")
        paths = (
            [f"  A {p}" for p in changes.added]
            + [f"  M {p}" for p in changes.modified]
            + [f"  D {p}" for p in changes.deleted]
            + [f"  R {o} -> {n}" for o, n in changes.renamed]
        )
        click.echo("Files:")
        click.echo("\n".join(paths) if paths else "  (no changes)")
        click.echo("Apps:")
        apps = _version_lines(before, after, changes.apps_changed, namespace)
        click.echo("\n".join("  " + line for line in apps) if apps else "  (no changes)")
        click.echo("Clusters:")
        clusters = _cluster_lines(before, after, changes.clusters_changed, namespace)
        click.echo("\n".join("  " + line for line in clusters) if clusters else "  (no changes)")
