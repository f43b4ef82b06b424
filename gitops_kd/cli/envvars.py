"""Every flag of a command also read from an environment variable GITOPS_KD_<FLAG> (the Helm chart's ConfigMap)."""

from __future__ import annotations

import click

ENV_PREFIX = "GITOPS_KD_"


def env_name(option: click.Option) -> str:
    """GITOPS_KD_ and the option's long name in upper case, dashes as underscores (--lease-name: GITOPS_KD_LEASE_NAME)."""
    long = next(o for o in option.opts if o.startswith("--"))
    return ENV_PREFIX + long[2:].upper().replace("-", "_")


def settable_from_env(command: click.Command) -> click.Command:
    """Give each option of ``command`` its variable (shown in --help); a flag on the command line still wins. A
    repeatable option takes a space-separated list; a boolean flag true/false."""
    for param in command.params:
        if isinstance(param, click.Option):
            param.envvar = env_name(param)
            param.show_envvar = True
    return command
