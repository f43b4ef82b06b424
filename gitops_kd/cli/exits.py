"""The exit statuses every gitops-kd command shares (as `kubectl diff` and `argocd app diff` use them).

- 0: done; nothing to report (valid, no differences, healthy, in sync).
- 1: done, and the answer is no: differences, an invalid tree or a refused commit, a cluster not healthy or not
  in sync, nothing found. What and why is printed.
- 2: could not do it: a usage error, a kubeconfig or context that does not work, an API server that does not
  answer or refuses the account, a Git repository or revision that cannot be read.
"""

from __future__ import annotations

import click

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_CANNOT_RUN = 2


class CannotRun(click.ClickException):
    """The command could not do its job; printed as one `error: ...` line, exit status EXIT_CANNOT_RUN."""

    exit_code = EXIT_CANNOT_RUN


class NotFound(click.ClickException):
    """What the command was asked about does not exist (a cluster, app or source by name): one `error: ...` line,
    exit status EXIT_FINDINGS, the same for every command."""

    exit_code = EXIT_FINDINGS


def source_exit(errors: object) -> int:
    """A SourceError's status: its files are invalid (it lists field errors: EXIT_FINDINGS), else the repository
    or revision could not be read (EXIT_CANNOT_RUN)."""
    return EXIT_FINDINGS if errors else EXIT_CANNOT_RUN


__all__ = ["EXIT_CANNOT_RUN", "EXIT_FINDINGS", "EXIT_OK", "CannotRun", "NotFound", "source_exit"]
