"""Command-line entry point: the `gitops-kd` group; each subcommand lives in its own module."""

from __future__ import annotations

import importlib

import click

# Modules that each define a `command` (click.Command or click.Group) added to the group.
# A module that does not exist yet is skipped, so parts of the CLI can land independently.
_SUBCOMMAND_MODULES = (
    "gitops_kd.cli.desired",
    "gitops_kd.cli.sim",
    "gitops_kd.cli.plan",
    "gitops_kd.cli.validate",
    "gitops_kd.cli.run",
    "gitops_kd.cli.demo",
    "gitops_kd.cli.history",
    "gitops_kd.cli.status",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gitops-kd")
def main() -> None:
    """gitops-kd: upgrade KubeDirector apps live, driven by Git."""


def _register() -> None:
    for name in _SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        main.add_command(module.command)


_register()
