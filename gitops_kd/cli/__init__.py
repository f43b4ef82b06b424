"""Command-line entry point: the `gitops-kd` group; each subcommand lives in its own module."""

from __future__ import annotations

import click

from gitops_kd.cli import demo, desired, history, livediff, plan, run, sim, status, suspend, sync, validate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gitops-kd")
def main() -> None:
    """gitops-kd: upgrade KubeDirector apps live, driven by Git."""


for _module in (desired, sim, plan, livediff, validate, run, demo, history, status, sync):
    main.add_command(_module.command)
main.add_command(suspend.suspend)
main.add_command(suspend.resume)
