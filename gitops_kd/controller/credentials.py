"""Git credentials from mounted files, as environment for every git the process runs (values never logged)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

# The token is read by git's credential helper at each use, so it is never in the environment or a log.
_TOKEN_HELPER = "!f() {{ test \"$1\" = get || exit 0; echo username={user}; printf 'password='; cat {file}; echo; }}; f"


class CredentialsError(ValueError):
    """A credentials file is missing or unusable."""


def _readable(path: str, flag: str) -> Path:
    """The file as an absolute path with its symlinks kept: a mounted Secret's `key -> ..data/key` link is read
    afresh at each use, so a rotated Secret is picked up (a resolved path pins the old, deleted, version)."""
    p = Path(path)
    if not p.is_file():
        raise CredentialsError(f"{flag} {path}: no such file")
    try:
        with p.open("rb") as f:
            first = f.read(1)
    except OSError as exc:
        raise CredentialsError(f"{flag} {path}: cannot be read ({exc.strerror})") from None
    if not first:
        raise CredentialsError(f"{flag} {path}: the file is empty")
    return Path(os.path.abspath(p))


def git_credentials_env(
    *,
    ssh_key_file: str | None = None,
    known_hosts_file: str | None = None,
    token_file: str | None = None,
    token_user: str = "x-access-token",
) -> dict[str, str]:
    """Environment for git: GIT_SSH_COMMAND using the key (and known_hosts, strict checking) for ssh URLs;
    a credential helper reading the token file for https URLs. Empty when no file is given."""
    env: dict[str, str] = {}
    if ssh_key_file:
        key = _readable(ssh_key_file, "--ssh-key-file")
        parts = ["ssh", "-i", str(key), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"]
        if known_hosts_file:
            hosts = _readable(known_hosts_file, "--known-hosts-file")
            parts += ["-o", f"UserKnownHostsFile={hosts}", "-o", "StrictHostKeyChecking=yes"]
        else:
            parts += ["-o", "StrictHostKeyChecking=accept-new"]
        env["GIT_SSH_COMMAND"] = " ".join(shlex.quote(x) for x in parts)
    elif known_hosts_file:
        raise CredentialsError("--known-hosts-file needs --ssh-key-file")
    if token_file:
        token = _readable(token_file, "--git-token-file")
        if not token.read_text(errors="replace").strip():
            raise CredentialsError(f"--git-token-file {token_file}: the file is empty")
        helper = _TOKEN_HELPER.format(user=shlex.quote(token_user), file=shlex.quote(str(token)))
        env.update(
            {
                "GIT_CONFIG_COUNT": "2",
                "GIT_CONFIG_KEY_0": "credential.helper",
                "GIT_CONFIG_VALUE_0": "",
                "GIT_CONFIG_KEY_1": "credential.helper",
                "GIT_CONFIG_VALUE_1": helper,
                "GIT_TERMINAL_PROMPT": "0",
            }
        )
    return env


def credentials_in_dir(directory: str) -> dict[str, str | None]:
    """The files a Kubernetes Secret mounted at `directory` provides: ssh-privatekey (+ known_hosts) or token.
    A missing directory (optional Secret not created: a public repository) gives no credentials."""
    d = Path(directory)
    found = {name: str(d / name) if (d / name).is_file() else None for name in ("ssh-privatekey", "known_hosts", "token")}
    return {"ssh_key_file": found["ssh-privatekey"], "known_hosts_file": found["known_hosts"], "token_file": found["token"]}
