"""Git trust: apply a new head only if its OpenPGP signature verifies against trusted keys and it is no force push.

`CommitTrust.check(git, head, baseline)` runs before anything of the commit is read and returns the
refusals (FieldErrors naming the commit and why; empty when the commit may be applied):

- with trusted keys, the head commit must carry an OpenPGP signature that `git verify-commit` checks
  good against a private GNUPGHOME made from exactly those armored public keys; if allowed fingerprints
  are given the signing key (primary or subkey fingerprint) must be one of them. Expired or revoked
  keys, bad signatures, unknown signers and SSH/X.509 signatures are refused. As in Flux and Argo CD
  only the head is verified: its signature covers its tree and, by hash, its whole history.
- unless force pushes are allowed, the head must descend from the baseline: the newest commit applied from
  the branch (recorded in the cluster's GitOpsKDSource, so every replica uses the same one). Commits
  refused on top of it never reached the cluster; resetting them away is not a force push.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gitops_kd.source.gitrepo import GitCache
from gitops_kd.spec import FieldError

log = logging.getLogger(__name__)

_FPR = re.compile(r"^(?:[0-9A-F]{40}|[0-9A-F]{64})$")
_STATUS = "[GNUPG:] "
_TIMEOUT = 60.0
_BAD = {
    "BADSIG": "bad signature from {who}: the commit was changed after it was signed",
    "EXPKEYSIG": "signed by {who} with an expired key",
    "REVKEYSIG": "signed by {who} with a revoked key",
    "EXPSIG": "the signature by {who} has expired",
}


def normalize_fingerprint(text: str) -> str:
    """Upper-case hex without spaces or a 0x prefix."""
    return text.replace(" ", "").removeprefix("0x").removeprefix("0X").upper()


@dataclass(frozen=True)
class SignatureCheck:
    """What gpg said about one commit signature: good or not, why, and the signing key."""

    good: bool
    reason: str = ""
    fingerprint: str = ""  # the signing (sub)key
    primary_fingerprint: str = ""
    signer: str = ""


def parse_status(status: str) -> SignatureCheck:
    """Interpret gpg's --status-fd lines (as `git verify-commit --raw` prints them) for one signature."""
    lines = [line[len(_STATUS) :].split(" ") for line in status.splitlines() if line.startswith(_STATUS)]
    by_kw = {parts[0]: parts[1:] for parts in lines if parts}
    for keyword, template in _BAD.items():
        if keyword in by_kw:
            args = by_kw[keyword]
            who = f"{' '.join(args[1:])} (key {args[0]})" if len(args) > 1 else f"key {args[0] if args else '?'}"
            return SignatureCheck(False, template.format(who=who))
    if "ERRSIG" in by_kw:
        args = by_kw["ERRSIG"]
        key = args[6] if len(args) > 6 and args[6] != "-" else (args[0] if args else "?")
        if len(args) > 5 and args[5] == "9":
            return SignatureCheck(False, f"signed by key {key} which is not among the trusted keys")
        return SignatureCheck(False, f"the signature by key {key} could not be checked (gpg error {args[5:6]})")
    if "GOODSIG" in by_kw and "VALIDSIG" in by_kw:
        valid = by_kw["VALIDSIG"]
        fpr = valid[0] if valid else ""
        primary = valid[9] if len(valid) > 9 else fpr
        return SignatureCheck(True, "", fpr, primary, " ".join(by_kw["GOODSIG"][1:]))
    return SignatureCheck(False, "gpg did not report a good signature")


class Keyring:
    """A private GNUPGHOME holding only the given armored public keys; close() removes it."""

    def __init__(self, armored_keys: Sequence[str], *, gpg: str = "gpg") -> None:
        if isinstance(armored_keys, str):
            raise ValueError("trusted_keys: expected a list of armored public keys, got one string")
        if not armored_keys:
            raise ValueError("trusted_keys: at least one armored public key is required")
        found = shutil.which(gpg)
        if found is None:
            raise ValueError(f"trusted_keys: the gpg program {gpg!r} is not installed")
        self.gpg = found
        self.home = Path(tempfile.mkdtemp(prefix="gitops-kd-gnupg-"))
        self.home.chmod(0o700)
        try:
            for index, key in enumerate(armored_keys):
                self._import(index, key)
            self.primary, self.all = self._fingerprints()
        except Exception:
            self.close()
            raise

    def _gpg(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.gpg, "--batch", "--no-tty", "--homedir", str(self.home), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
        )

    def _import(self, index: int, key: str) -> None:
        where = f"trusted_keys[{index}]"
        if "PRIVATE KEY BLOCK" in key:
            raise ValueError(f"{where}: is a private key; give the armored PUBLIC key")
        if "-----BEGIN PGP PUBLIC KEY BLOCK-----" not in key:
            raise ValueError(f"{where}: not an armored OpenPGP public key (no BEGIN PGP PUBLIC KEY BLOCK line)")
        proc = self._gpg("--status-fd", "2", "--import-options", "import-minimal", "--import", stdin=key)
        if proc.returncode != 0 or "IMPORT_OK" not in proc.stderr:
            detail = "; ".join(line for line in proc.stderr.splitlines() if not line.startswith(_STATUS))
            raise ValueError(f"{where}: gpg could not import the key: {detail or 'no key found'}")

    def _fingerprints(self) -> tuple[frozenset[str], frozenset[str]]:
        proc = self._gpg("--with-colons", "--fingerprint", "--fingerprint", "--list-keys")
        primary: set[str] = set()
        every: set[str] = set()
        previous = ""
        for line in proc.stdout.splitlines():
            fields = line.split(":")
            if fields[0] == "fpr" and len(fields) > 9:  # an fpr record follows its pub or sub record
                every.add(fields[9])
                if previous == "pub":
                    primary.add(fields[9])
            previous = fields[0]
        return frozenset(primary), frozenset(every)

    def close(self) -> None:
        """Stop any gpg agent started for this home and remove it."""
        if shutil.which("gpgconf"):
            subprocess.run(
                ["gpgconf", "--homedir", str(self.home), "--kill", "all"], capture_output=True, timeout=_TIMEOUT, check=False
            )
        shutil.rmtree(self.home, ignore_errors=True)


class CommitTrust:
    """The trust policy of a GitSource; see the module docstring."""

    def __init__(
        self,
        trusted_keys: Sequence[str] | None = None,
        *,
        allowed_fingerprints: Sequence[str] | None = None,
        allow_force_push: bool = False,
        gpg: str = "gpg",
    ) -> None:
        self.allow_force_push = allow_force_push
        self.allowed: frozenset[str] | None = None
        if allowed_fingerprints is not None:
            if trusted_keys is None:
                raise ValueError("allowed_fingerprints: needs trusted_keys")
            self.allowed = frozenset(_checked_fingerprints(allowed_fingerprints))
        self.keyring = Keyring(trusted_keys, gpg=gpg) if trusted_keys is not None else None
        if self.keyring is not None and self.allowed is not None and not self.allowed & self.keyring.all:
            self.keyring.close()
            raise ValueError("allowed_fingerprints: none of them is a fingerprint of the trusted keys")

    @property
    def verifies_signatures(self) -> bool:
        return self.keyring is not None

    def check(self, git: GitCache, head: str, baseline: str | None) -> tuple[FieldError, ...]:
        """Refusals for applying `head` after `baseline`, the newest applied commit (empty tuple: trusted)."""
        errors: list[FieldError] = []
        if self.keyring is not None:
            reason = self.signature_problem(git, head)
            if reason:
                errors.append(FieldError(f"commit {head}", "signature", reason))
        if not self.allow_force_push and baseline is not None and baseline != head:
            reason = _force_push_problem(git, head, baseline)
            if reason:
                errors.append(FieldError(f"commit {head}", "history", reason))
        for error in errors:
            log.warning("refusing %s", error)
        return tuple(errors)

    def signature_problem(self, git: GitCache, commit: str) -> str:
        """Why `commit`'s signature is not trusted ("" when it is)."""
        assert self.keyring is not None
        header = git.run("cat-file", "commit", commit).stdout.split("\n\n", 1)[0]
        signature = re.search(r"^gpgsig(?:-sha256)? (.*)$", header, re.MULTILINE)
        if signature is None:
            return "the commit is not signed; only commits signed by a trusted key are applied"
        if "SSH SIGNATURE" in signature.group(1) or "SIGNED MESSAGE" in signature.group(1):
            return "the commit has an SSH or X.509 signature; only OpenPGP signatures are verified"
        proc = git.run(
            "-c", f"gpg.program={self.keyring.gpg}", "verify-commit", "--raw", commit, env={"GNUPGHOME": str(self.keyring.home)}
        )
        result = parse_status(proc.stderr)
        if not result.good:
            return result.reason
        if result.primary_fingerprint not in self.keyring.primary:
            return f"signed by key {result.fingerprint} which is not among the trusted keys"
        if self.allowed is not None and not {result.fingerprint, result.primary_fingerprint} & self.allowed:
            return f"signed by {result.signer} (key {result.primary_fingerprint}) which is not in allowed_fingerprints"
        log.info("commit %s: good signature from %s (key %s)", commit, result.signer, result.primary_fingerprint)
        return ""

    def close(self) -> None:
        if self.keyring is not None:
            self.keyring.close()


def _checked_fingerprints(values: Sequence[str]) -> list[str]:
    if isinstance(values, str):
        raise ValueError("allowed_fingerprints: expected a list of fingerprints, got one string")
    out = []
    for index, value in enumerate(values):
        fpr = normalize_fingerprint(str(value))
        if not _FPR.match(fpr):
            raise ValueError(f"allowed_fingerprints[{index}]: {value!r} is not a key fingerprint (40 or 64 hex digits)")
        out.append(fpr)
    return out


def _force_push_problem(git: GitCache, head: str, baseline: str) -> str:
    known = git.run("cat-file", "-e", f"{baseline}^{{commit}}")
    if known.returncode != 0:
        return (
            f"cannot check that it descends from the last applied commit {baseline}, which is not in the "
            "repository; refusing a possible force push (set allow_force_push to accept it)"
        )
    proc = git.run("merge-base", "--is-ancestor", baseline, head)
    if proc.returncode == 1:
        return (
            f"does not descend from the last applied commit {baseline}: the branch was force-pushed "
            "(set allow_force_push to accept rewritten history)"
        )
    if proc.returncode != 0:
        return f"could not compare with the last applied commit {baseline}: {proc.stderr.strip()}"
    return ""
