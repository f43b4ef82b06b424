"""Command-line entry point: the `gitops-kd` group; each subcommand lives in its own module."""

from __future__ import annotations

from typing import Any

import click

from gitops_kd.cli import demo, desired, history, livediff, plan, run, sim, status, suspend, sync, validate


class Commands(click.Group):
    """The group; a client-library error that escapes a command (an API server that does not answer or refuses
    the account) becomes its one-line CannotRun instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        from gitops_kd.cli.kubeclient import as_cannot_run

        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            cannot = as_cannot_run(exc)
            if cannot is None:
                raise
            raise cannot from exc


@click.group(
    cls=Commands,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Exit status (every command): 0 done, nothing to report; 1 done, and the answer is no "
    "(differences, invalid or refused, not healthy or not in sync, not found); 2 could not do it "
    "(usage, kubeconfig or context, API server unreachable or refusing, Git unreadable).",
)
@click.version_option(package_name="gitops-kd")
def main() -> None:
    """gitops-kd: upgrade KubeDirector apps live, driven by Git."""


for _module in (desired, sim, plan, livediff, validate, run, demo, history, status, sync):
    main.add_command(_module.command)
main.add_command(suspend.suspend)
main.add_command(suspend.resume)
