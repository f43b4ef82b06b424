"""Git credential options shared by the commands that fetch a repository (`run`, `plan`), and applying them."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from gitops_kd.cli.exits import CannotRun

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])


def git_credential_options(fn: F) -> F:
    """Add --ssh-key-file, --known-hosts-file, --git-token-file and --git-credentials-dir to a command."""
    for option in reversed(
        (
            click.option(
                "--ssh-key-file",
                type=click.Path(dir_okay=False),
                default=None,
                help="SSH private key for git@/ssh:// repository URLs.",
            ),
            click.option(
                "--known-hosts-file",
                type=click.Path(dir_okay=False),
                default=None,
                help="known_hosts for --ssh-key-file (strict host key checking).",
            ),
            click.option(
                "--git-token-file",
                type=click.Path(dir_okay=False),
                default=None,
                help="File holding an access token for https repository URLs (read by a git credential helper).",
            ),
            click.option(
                "--git-credentials-dir",
                type=click.Path(file_okay=False),
                default=None,
                help="A mounted Secret with ssh-privatekey (+ known_hosts) or token; missing files are ignored.",
            ),
        )
    ):
        fn = option(fn)
    return fn


def apply_git_credentials(
    ssh_key_file: str | None, known_hosts_file: str | None, git_token_file: str | None, git_credentials_dir: str | None
) -> None:
    """Put the git credential environment into os.environ (every git the process runs inherits it)."""
    from gitops_kd.controller.credentials import CredentialsError, credentials_in_dir, git_credentials_env

    found: dict[str, str | None] = credentials_in_dir(git_credentials_dir) if git_credentials_dir else {}
    files = {
        "ssh_key_file": ssh_key_file or found.get("ssh_key_file"),
        "known_hosts_file": known_hosts_file or found.get("known_hosts_file"),
        "token_file": git_token_file or found.get("token_file"),
    }
    try:
        env = git_credentials_env(
            ssh_key_file=files["ssh_key_file"], known_hosts_file=files["known_hosts_file"], token_file=files["token_file"]
        )
    except CredentialsError as exc:
        from_dir = any(v and v == found.get(k) for k, v in files.items())
        raise CannotRun(str(exc) + (f" (a file of --git-credentials-dir {git_credentials_dir})" if from_dir else "")) from exc
    os.environ.update(env)
    if files["token_file"]:
        from gitops_kd.redact import add_secret

        try:
            add_secret(Path(files["token_file"]).read_text(errors="replace"))  # it never shows in a message
        except OSError:
            pass  # git_credentials_env read it just now; a vanished file has no token left to leak
    if env:
        log.info("git credentials: %s", ", ".join(k for k, v in files.items() if v))
