"""`gitops-kd validate --base REV`: read the base revision as what runs, and judge the change with review/kd_rules."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from gitops_kd.cli.exits import EXIT_CANNOT_RUN
from gitops_kd.cli.revisions import desired_or_exit
from gitops_kd.cli.run import repo_url
from gitops_kd.kd.flavour import LIVE_UPGRADE, STOCK
from gitops_kd.review.kd_rules import change_errors, switch_warnings
from gitops_kd.source import DesiredState, GitSource
from gitops_kd.spec import FieldError
from gitops_kd.spec.model import KDApp, KDCluster
from gitops_kd.spec.positions import locate

FLAVOURS = (STOCK, LIVE_UPGRADE)

BASE_HELP = (
    "Also refuse what KubeDirector and the in-use rules would refuse of the change from this revision "
    "(taken as what runs; in CI the merge base with the target branch) to the files checked: a KDCluster's "
    "spec.app or spec.appCatalog, a role property other than members of a role with members; while a "
    "cluster of the base uses a KDApp whose spec changes, a role added, a changed cardinality or "
    "configPackage; a changed distroID, a removed role that has members, a version change the stanza's "
    "from[] or downgrade rules do not allow."
)
FLAVOUR_HELP = (
    "With --base: the KubeDirector the target cluster runs: stock (bluek8s master), or live-app-upgrade "
    "(its branch, where a spec.app switch is its native upgrade and not refused as read-only)."
)


def _git_top(path: Path) -> Path | None:
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=False)
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 and done.stdout.strip() else None


def base_state(repo: str, rev: str, branch: str, namespace: str) -> DesiredState:
    """The desired state at ``rev`` of the repository ``repo`` (a URL, or a local path at the top of a Git
    repository); one that cannot be read, or that is refused itself, exits 2 (there is nothing to compare with)."""
    if Path(repo).is_dir() and _git_top(Path(repo)) != Path(repo).resolve():
        click.echo(f"error: --base {rev}: {repo} is not the top of a Git repository", err=True)
        raise SystemExit(EXIT_CANNOT_RUN)
    with GitSource(repo_url(repo), branch, default_namespace=namespace) as source:
        return desired_or_exit(source, repo, rev, "--base", exit_code=EXIT_CANNOT_RUN)


_ROLE_BY_ID = re.compile(r"^spec\.roles\[([^\]]*[^\d\]][^\]]*)\]")


def _indexed(err: FieldError, head: DesiredState) -> FieldError:
    """The error with a role named by its id (``spec.roles[worker]``, as the in-use rules name it) named by its
    index in the file instead, so that locate finds where it is written."""
    found = _ROLE_BY_ID.match(err.field)
    objects: list[KDApp | KDCluster] = [*head.apps.values(), *head.clusters.values()]
    obj = next((o for o in objects if (o.source, o.document) == (err.file, err.document)), None)
    if found is None or obj is None:
        return err
    ids = [str(r.get("id")) for r in (obj.body.get("spec") or {}).get("roles") or ()]
    if found.group(1) not in ids:
        return err
    return replace(err, field=f"spec.roles[{ids.index(found.group(1))}]{err.field[found.end() :]}")


def change_refusals(base: DesiredState, head: DesiredState, flavour: str, read: Any) -> list[FieldError]:
    """review/kd_rules.change_errors, located in the files ``read(file) -> bytes | None`` returns (the field
    as the rules name it)."""
    errors = change_errors(base, head, flavour)
    located = locate([_indexed(e, head) for e in errors], read)
    return [replace(where, field=e.field) for e, where in zip(errors, located, strict=True)]


def change_warnings(base: DesiredState, head: DesiredState, flavour: str, read: Any) -> list[FieldError]:
    """review/kd_rules.switch_warnings (a native switch is one way), located in the files ``read`` returns."""
    found = switch_warnings(base, head, flavour)
    return [replace(where, field=w.field) for w, where in zip(found, locate(found, read), strict=True)]


__all__ = ["BASE_HELP", "FLAVOURS", "FLAVOUR_HELP", "base_state", "change_refusals", "change_warnings"]
