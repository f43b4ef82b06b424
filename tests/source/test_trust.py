"""Git trust for GitSource: signed / unsigned / untrusted / tampered / expired commits and force pushes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitops_kd.source import GitSource
from gitops_kd.source.trust import parse_status

from .conftest import GIT_ENV, WorkRepo, app_yaml

pytestmark = pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg is not installed")
PAST = "20200101T000000"


@dataclass(frozen=True)
class Signer:
    """A secret key in a test GNUPGHOME and a gpg wrapper git can use as gpg.program."""

    name: str
    fingerprint: str
    program: Path
    public: str


def _gpg(home: Path, *args: str, faked: str | None = None) -> str:
    extra = ["--faked-system-time", faked + "!"] if faked else []
    return subprocess.run(
        ["gpg", "--batch", "--no-tty", "--homedir", str(home), *extra, *args], check=True, capture_output=True, text=True
    ).stdout


def _signer(base: Path, name: str, *, expire: str = "never", faked: str | None = None) -> Signer:
    home = base / name
    home.mkdir(mode=0o700)
    email = f"{name}@example.com"
    _gpg(
        home,
        "--pinentry-mode",
        "loopback",
        "--passphrase",
        "",
        "--quick-gen-key",
        f"{name} <{email}>",
        "ed25519",
        "sign",
        expire,
        faked=faked,
    )
    fpr = next(line.split(":")[9] for line in _gpg(home, "--with-colons", "--list-keys").splitlines() if line.startswith("fpr:"))
    program = base / f"gpg-{name}"
    fake = f" --faked-system-time {faked}!" if faked else ""
    program.write_text(f'#!/bin/sh\nexec gpg --homedir "{home}"{fake} "$@"\n')
    program.chmod(0o755)
    return Signer(name, fpr, program, _gpg(home, "--armor", "--export", fpr))


@pytest.fixture(scope="module")
def signers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Signer]]:
    base = tmp_path_factory.mktemp("gpg")
    keys = {name: _signer(base, name) for name in ("alice", "bob", "mallory")}
    # made "in 2020" with a one-day lifetime: it signs in the past and is expired now
    keys["old"] = _signer(base, "old", expire="1d", faked=PAST)
    yield keys
    for name in keys:
        subprocess.run(["gpgconf", "--homedir", str(base / name), "--kill", "all"], capture_output=True)


def signed_commit(repo: WorkRepo, signer: Signer, message: str = "signed") -> str:
    repo.git("add", "-A")
    repo.git(
        "-c",
        f"gpg.program={signer.program}",
        "-c",
        f"user.signingkey={signer.fingerprint}",
        "commit",
        "-q",
        "--allow-empty",
        "-S",
        "-m",
        message,
    )
    return repo.git("rev-parse", "HEAD")


@pytest.fixture
def signed_repo(tmp_path: Path, signers: dict[str, Signer]) -> WorkRepo:
    work = WorkRepo(tmp_path / "origin")
    work.write("apps/hello.yaml", app_yaml("hello"))
    signed_commit(work, signers["alice"], "initial")
    return work


def source(repo: WorkRepo, tmp_path: Path, *keys: Signer, **options: object) -> GitSource:
    return GitSource(repo.url, "main", tmp_path / "cache", trusted_keys=[k.public for k in keys], **options)


def test_commit_signed_by_a_trusted_key_is_accepted(signed_repo, signers, tmp_path) -> None:
    with source(signed_repo, tmp_path, signers["alice"], signers["bob"]) as src:
        result = src.poll()
        assert result.accepted, result.errors
        assert result.desired is not None and ("default", "hello") in result.desired.apps
        signed_repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
        by_bob = signed_commit(signed_repo, signers["bob"], "bob's upgrade")
        result = src.poll()
        assert result.accepted and result.commit == by_bob
        assert str(result.desired.apps[("default", "hello")].version) == "2.0.0"


def test_unsigned_commit_is_refused_and_last_trusted_state_stays(signed_repo, signers, tmp_path) -> None:
    with source(signed_repo, tmp_path, signers["alice"]) as src:
        good = src.poll()
        assert good.accepted
        signed_repo.write("apps/hello.yaml", app_yaml("hello", "9.9.9"))
        unsigned = signed_repo.commit("sneaky unsigned change")
        result = src.poll()
        assert result.changed and not result.accepted
        assert result.commit == unsigned
        assert [(e.file, e.field) for e in result.errors] == [(f"commit {unsigned}", "signature")]
        assert "not signed" in result.errors[0].reason
        assert result.desired is not None and result.desired.commit == good.commit
        assert str(result.desired.apps[("default", "hello")].version) == "1.0.0"
        assert result.changes.empty  # nothing of the refused commit was read


def test_refused_commit_content_is_never_parsed(signed_repo, signers, tmp_path) -> None:
    with source(signed_repo, tmp_path, signers["alice"]) as src:
        assert src.poll().accepted
        parses = src.parse_count
        signed_repo.write("apps/broken.yaml", "kind: [unclosed\n")
        signed_repo.commit("unsigned and broken")
        result = src.poll()
        assert not result.accepted and len(result.errors) == 1 and result.errors[0].field == "signature"
        assert src.parse_count == parses


def test_commit_signed_by_an_untrusted_key_is_refused(signed_repo, signers, tmp_path) -> None:
    with source(signed_repo, tmp_path, signers["alice"]) as src:
        assert src.poll().accepted
        bad = signed_commit(signed_repo, signers["mallory"], "mallory was here")
        result = src.poll()
        assert not result.accepted
        assert result.errors[0].file == f"commit {bad}"
        assert "not among the trusted keys" in result.errors[0].reason
        assert signers["mallory"].fingerprint in result.errors[0].reason


def test_tampered_commit_has_a_bad_signature(signed_repo, signers, tmp_path) -> None:
    with source(signed_repo, tmp_path, signers["alice"]) as src:
        assert src.poll().accepted
        signed_commit(signed_repo, signers["alice"], "original message")
        raw = signed_repo.git("cat-file", "commit", "HEAD")
        forged = subprocess.run(
            ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
            cwd=signed_repo.path,
            input=raw.replace("original message", "forged message") + "\n",
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **GIT_ENV},
        ).stdout.strip()
        signed_repo.git("update-ref", "refs/heads/main", forged)
        result = src.poll()
        assert result.commit == forged and not result.accepted
        assert "bad signature from alice <alice@example.com>" in result.errors[0].reason


def test_commit_signed_with_an_expired_key_is_refused(signed_repo, signers, tmp_path) -> None:
    with source(signed_repo, tmp_path, signers["alice"], signers["old"]) as src:
        assert src.poll().accepted
        signed_commit(signed_repo, signers["old"], "signed in 2020")
        result = src.poll()
        assert not result.accepted and "expired key" in result.errors[0].reason


def test_allowed_fingerprints_narrow_the_trusted_keys(signed_repo, signers, tmp_path) -> None:
    alice = signers["alice"].fingerprint
    spaced = " ".join(alice[i : i + 4] for i in range(0, 40, 4)).lower()  # as `gpg --fingerprint` prints it
    with source(signed_repo, tmp_path, signers["alice"], signers["bob"], allowed_fingerprints=[spaced]) as src:
        assert src.poll().accepted
        signed_commit(signed_repo, signers["bob"], "bob is trusted but not allowed")
        result = src.poll()
        assert not result.accepted and "not in allowed_fingerprints" in result.errors[0].reason
        signed_commit(signed_repo, signers["alice"], "alice on top of bob")
        assert src.poll().accepted  # only the head is verified


def test_force_push_is_refused_unless_allowed(signed_repo, signers, tmp_path) -> None:
    signed_repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
    applied = signed_commit(signed_repo, signers["alice"], "2.0.0")
    with source(signed_repo, tmp_path, signers["alice"]) as src:
        assert src.poll().accepted
        src.mark_applied(applied)
        signed_repo.git("reset", "-q", "--hard", "HEAD~1")
        signed_repo.write("apps/hello.yaml", app_yaml("hello", "3.0.0"))
        rewritten = signed_commit(signed_repo, signers["alice"], "rewritten history")
        result = src.poll()
        assert not result.accepted
        assert [(e.file, e.field) for e in result.errors] == [(f"commit {rewritten}", "history")]
        assert f"does not descend from the last applied commit {applied}" in result.errors[0].reason
        assert result.desired is not None and result.desired.commit == applied
    with source(signed_repo, tmp_path, signers["alice"], allow_force_push=True) as src:
        assert src.applied_commit == applied
        result = src.poll()
        assert result.accepted and result.commit == rewritten


def test_force_push_policy_applies_without_signing_too(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as src:
        first = src.poll()
        assert first.accepted
        src.mark_applied(first.commit)
        repo.write("README.md", "more\n")
        ahead = repo.commit("fast-forward")
        assert src.poll().accepted
        repo.git("commit", "-q", "--amend", "-m", "amended")
        amended = repo.git("rev-parse", "HEAD")
        assert amended != ahead
        assert src.poll().accepted  # the amended commit still descends from the applied one
        repo.git("checkout", "-q", "--orphan", "other")
        repo.commit("unrelated root")
        repo.git("branch", "-f", "main", "other")
        result = src.poll()
        assert not result.accepted and "force-pushed" in result.errors[0].reason


def test_restart_keeps_the_applied_state_when_the_new_head_is_untrusted(signed_repo, signers, tmp_path) -> None:
    with source(signed_repo, tmp_path, signers["alice"]) as src:
        applied = src.poll().commit
        src.mark_applied(applied)
    signed_repo.write("apps/hello.yaml", app_yaml("hello", "6.6.6"))
    signed_repo.commit("unsigned while we were down")
    with source(signed_repo, tmp_path, signers["alice"]) as src:
        result = src.poll()
        assert not result.accepted
        assert result.desired is not None and result.desired.commit == applied
        assert src.last_good is not None and src.last_good.commit == applied


@pytest.mark.parametrize(
    "keys, fingerprints, message",
    [
        (["not a key"], None, r"trusted_keys\[0\]: not an armored OpenPGP public key"),
        (["-----BEGIN PGP PRIVATE KEY BLOCK-----\n..."], None, r"trusted_keys\[0\]: is a private key"),
        (
            ["-----BEGIN PGP PUBLIC KEY BLOCK-----\n\ngarbage\n-----END PGP PUBLIC KEY BLOCK-----\n"],
            None,
            r"trusted_keys\[0\]: gpg could not import the key",
        ),
        ([], None, "at least one armored public key"),
        ("one string", None, "expected a list"),
        (None, ["A" * 40], "allowed_fingerprints: needs trusted_keys"),
        ("alice", ["xyz"], r"allowed_fingerprints\[0\]: 'xyz' is not a key fingerprint"),
        ("alice", ["B" * 40], "none of them is a fingerprint of the trusted keys"),
    ],
)
def test_bad_trust_configuration_is_rejected(signers, tmp_path, keys, fingerprints, message) -> None:
    if keys == "alice":
        keys = [signers["alice"].public]
    with pytest.raises(ValueError, match=message):
        GitSource("file:///nowhere", "main", tmp_path / "cache", trusted_keys=keys, allowed_fingerprints=fingerprints)


def test_parse_status_reasons() -> None:
    errsig = "[GNUPG:] ERRSIG 0480CAEEE04B8FA6 22 8 00 1796226579 9 0FCE850D3BA37266303DD00F0480CAEEE04B8FA6\n"
    assert parse_status(errsig).reason == (
        "signed by key 0FCE850D3BA37266303DD00F0480CAEEE04B8FA6 which is not among the trusted keys"
    )
    revoked = "[GNUPG:] REVKEYSIG 0480CAEEE04B8FA6 Eve <eve@example.com>\n"
    assert parse_status(revoked).reason == "signed by Eve <eve@example.com> (key 0480CAEEE04B8FA6) with a revoked key"
    assert not parse_status("").good
