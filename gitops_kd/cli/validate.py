"""`gitops-kd validate`: the checks a commit must pass, offline, on a directory or a revision."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from gitops_kd.cli.base_rules import BASE_HELP, FLAVOUR_HELP, FLAVOURS, base_state, change_refusals, change_warnings
from gitops_kd.cli.exits import CannotRun
from gitops_kd.cli.options import budget_options
from gitops_kd.cli.problems import FORMATS, render
from gitops_kd.cli.revisions import resolve
from gitops_kd.cli.run import repo_url
from gitops_kd.cli.terminal import printable
from gitops_kd.kd.storage import relies_on_default_class, roles_without_class, storage_class_reason
from gitops_kd.source import DesiredState, GitSource, SourceError
from gitops_kd.source.budget import Budget
from gitops_kd.source.layout import MANIFEST_ROOTS
from gitops_kd.source.worktree import worktree_desired
from gitops_kd.spec import FieldError
from gitops_kd.spec.positions import locate


def tree_root(path: Path) -> Path:
    """The repository root a path belongs to: a directory is one; for a file, the nearest enclosing
    directory holding apps/, clusters/ or .git (else the file's directory)."""
    path = path.resolve()
    if path.is_dir():
        return path
    for parent in path.parents:
        if any((parent / marker).exists() for marker in (*MANIFEST_ROOTS, ".git")):
            return parent
    return path.parent


def not_a_repository(root: Path) -> str:
    """Why `root` is not a desired-state tree ("" when it is one): neither apps/ nor clusters/ in it and no Git
    work tree around it (an empty or mistyped folder would otherwise pass as valid with nothing in it)."""
    if any((root / marker).is_dir() for marker in MANIFEST_ROOTS):
        return ""
    if any((p / ".git").exists() for p in (root, *root.parents)):
        return ""
    where = os.path.relpath(root)
    return (
        f"{where}: not a gitops-kd repository (no {' or '.join(f'{m}/' for m in MANIFEST_ROOTS)} folder, not in a "
        "Git work tree); run it in a copy of repo-template, or name one with PATH or --repo"
    )


def _shown(root: Path, err: FieldError) -> FieldError:
    """The error with its file relative to the current directory (how editors and CI annotations want it)."""
    prefix = os.path.relpath(root)
    if prefix == ".":
        return err
    return FieldError(Path(prefix, err.file).as_posix(), err.field, err.reason, err.document, err.line, err.column)


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def _check_tree(root: Path, namespace: str, budget: Budget) -> tuple[list[FieldError], DesiredState | None]:
    try:
        return [], worktree_desired(root, namespace, budget)
    except SourceError as exc:
        return [_shown(root, e) for e in exc.errors], None


def _check_rev(repo: str, rev: str, branch: str, namespace: str, budget: Budget) -> tuple[list[FieldError], DesiredState | None]:
    with GitSource(repo_url(repo), branch, default_namespace=namespace, budget=budget) as source:
        try:
            return [], source.desired_at(resolve(source, repo, rev))
        except SourceError as exc:
            if not exc.errors:
                click.echo(f"error: {printable(exc.message)}", err=True)
                raise SystemExit(2) from exc
            return list(exc.errors), None


def storage_class_errors(state: DesiredState, read: Any) -> list[FieldError]:
    """A role with storage and no storageClassName, in a KDCluster not annotated as relying on the target
    cluster's default StorageClass (kd/storage.py); ``read(file) -> bytes | None`` locates the field."""
    found = [
        FieldError(c.source, f"spec.roles[{i}].storage.storageClassName", storage_class_reason(role), c.document)
        for _, c in sorted(state.clusters.items())
        if not relies_on_default_class(c.body)
        for i, role in roles_without_class(c.body.get("spec") or {})
    ]
    return list(locate(found, read))


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("--repo", default=None, help="Validate a revision of this Git repository (URL or local path) instead.")
@click.option("--rev", default="HEAD", show_default=True, help="With --repo: the revision to validate.")
@click.option(
    "--branch",
    default="main",
    show_default=True,
    help="With --repo or --base: the branch fetched (a local revision it does not reach is fetched by sha).",
)
@click.option(
    "--default-namespace",
    "namespace",
    default="default",
    show_default=True,
    help="Namespace for specs that name none (duplicates are found after filling it in).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="text: file:line:column: field: reason; json; github: workflow-command annotations.",
)
@click.option(
    "--default-storage-class/--no-default-storage-class",
    "default_class",
    default=False,
    envvar="GITOPS_KD_DEFAULT_STORAGE_CLASS",
    show_default=True,
    help="The target cluster has a default StorageClass, so a role's storage may leave storageClassName "
    "out (KubeDirector fills it in); without it such a role is refused, as KubeDirector refuses it "
    "on a cluster without one.",
)
@click.option("--base", default=None, metavar="REV", help=BASE_HELP)
@budget_options
@click.option(
    "--kubedirector",
    "flavour",
    type=click.Choice(FLAVOURS),
    default=FLAVOURS[0],
    show_default=True,
    envvar="GITOPS_KD_KUBEDIRECTOR",
    help=FLAVOUR_HELP,
)
def command(
    paths: tuple[str, ...],
    repo: str | None,
    rev: str,
    branch: str,
    namespace: str,
    fmt: str,
    default_class: bool,
    base: str | None,
    flavour: str,
    max_commit_bytes: int,
    max_commit_files: int,
) -> None:
    """Check PATH (a repository directory, or a file in one; default .) or --repo/--rev as gitops-kd checks a
    commit before it accepts it: layout, size limits, YAML/JSON, CRD schemas, spec rules, the upgrade stanza,
    cross-file references; and what KubeDirector would refuse that is known offline: a role's storage without
    storageClassName unless --default-storage-class (or the KDCluster's annotation gitops-kd.io/default-storage-class:
    "true") says the cluster has a default class. With --base REV, also the change from REV taken as what runs
    (in PATH's Git repository, or --repo): what KubeDirector (--kubedirector) and the in-use rules would refuse of
    it, and warn of what cannot be undone: on --kubedirector live-app-upgrade, a native switch of a KDCluster's
    spec.app is reverted by `git revert` only until KubeDirector has finished it. No cluster is read.

    Exit status: 0 valid, 1 refused (every error listed), 2 when it cannot be read (git failure, usage, a --base
    that is unknown or refused itself).
    """
    if repo is not None and paths:
        raise click.UsageError("give PATH or --repo, not both")
    budget = Budget(max_commit_bytes, max_commit_files)
    errors: list[FieldError] = []
    warnings: list[FieldError] = []
    states: list[DesiredState] = []
    summary: dict[str, Any]
    if repo is not None:
        errors, state = _check_rev(repo, rev, branch, namespace, budget)
        summary = {"source": f"{repo}@{rev}", "commit": state.commit if state else None}
        states = [state] if state else []
        if state is not None and not default_class:
            errors += storage_class_errors(state, lambda _file: None)
        if state is not None and base is not None:
            before = base_state(repo, base, branch, namespace)
            errors += change_refusals(before, state, flavour, lambda _file: None)
            warnings += change_warnings(before, state, flavour, lambda _file: None)
    else:
        roots = list(dict.fromkeys(tree_root(Path(p)) for p in paths or (".",)))
        for root in roots:
            if problem := not_a_repository(root):
                raise CannotRun(problem)
            found, state = _check_tree(root, namespace, budget)
            if state is not None and not default_class:
                found += [_shown(root, e) for e in storage_class_errors(state, lambda f, r=root: _read(r / f))]
            if state is not None and base is not None:
                before = base_state(str(root), base, branch, namespace)
                found += [_shown(root, e) for e in change_refusals(before, state, flavour, lambda f, r=root: _read(r / f))]
                warnings += [_shown(root, w) for w in change_warnings(before, state, flavour, lambda f, r=root: _read(r / f))]
            errors += found
            states += [state] if state else []
        summary = {"source": " ".join(os.path.relpath(r) for r in roots)}
    summary["apps"] = sum(len(s.apps) for s in states) if not errors else None
    summary["clusters"] = sum(len(s.clusters) for s in states) if not errors else None
    for line in render(errors, fmt, summary, warnings):
        click.echo(line)
    if errors:
        raise SystemExit(1)
