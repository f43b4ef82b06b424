"""Git credentials end to end through `gitops-kd run`: a token over HTTP (real git http-backend behind Basic auth),
an SSH key over ssh:// (a recording ssh first on PATH), and clear errors for unusable credential files."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.testing import wait_for
from kdsim.cluster import EmbeddedCluster
from kubeplumb.rest import RestClient
from tests.kdcluster import embedded_cluster
from tests.source.git_http import HTTP_BACKEND, GitHttpServer
from tests.source.remote_fixtures import (
    CLI,
    env_recording_git,
    fake_ssh,
    has_option,
    publish,
    run_process,
    served_repo,
    ssh_args,
    write_secret,
)

KD = "kubedirector.hpe.com/v1beta1"
TOKEN = "tok-1st-0123456789abcdef"
ROTATED = "tok-2nd-fedcba9876543210"
EXTRA_APP = (
    (Path(__file__).resolve().parents[2] / "repo-template" / "apps" / "hello.yaml")
    .read_text()
    .replace("name: hello\n", "name: extra\n", 1)
)

pytestmark = pytest.mark.skipif(not HTTP_BACKEND.exists(), reason="git http-backend not installed")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    """An embedded API server (no simulated controllers: only the KDApps gitops-kd applies matter here)."""
    embedded = embedded_cluster(tmp_path / "cluster", controllers=False).start()
    try:
        yield embedded
    finally:
        embedded.stop()


def kdapp(cluster: EmbeddedCluster, name: str) -> dict[str, Any] | None:
    return RestClient(cluster.api_client()).get_or_none(KD, "kubedirectorapps", "default", name)


def test_token_over_http_applies_never_leaks_and_follows_secret_rotation(tmp_path: Path, cluster: EmbeddedCluster) -> None:
    work, bare = served_repo(tmp_path)
    secret = tmp_path / "secret"
    write_secret(secret, {"token": TOKEN + "\n"}, "2024_01_01_00_00_00.1")
    git_env = tmp_path / "git-env.log"
    env_recording_git(tmp_path / "bin", git_env)
    with GitHttpServer(bare.parent, TOKEN) as server:
        url = f"{server.url}/specs.git"
        run = run_process(tmp_path, url, cluster.kubeconfig, "--git-credentials-dir", str(secret), path_prefix=tmp_path / "bin")
        try:
            wait_for("KDApp hello applied from the http remote", lambda: kdapp(cluster, "hello"), 60)
            assert server.auth_ok > 0
            # The Secret is rotated the kubelet's way (the old ..<stamp> dir is gone) and the server only
            # accepts the new token: the next fetch must read the new file, no restart.
            server.token = ROTATED
            write_secret(secret, {"token": ROTATED + "\n"}, "2024_02_01_00_00_00.2")
            publish(work, bare, "apps/extra.yaml", EXTRA_APP)
            wait_for("KDApp extra applied after the rotation", lambda: kdapp(cluster, "extra"), 60)
        finally:
            code = run.stop()
    output = run.log()
    assert code == 0, output[-3000:]
    assert "DEBUG git.cmd: Popen(['git', 'fetch'" in output  # the debug log shows every git command run
    for token in (TOKEN, ROTATED):
        assert token not in output
        assert token not in git_env.read_text()
    assert "GIT_CONFIG_VALUE_1=!f()" in git_env.read_text()  # the recorder saw git run with the helper


def test_wrong_token_names_the_url_says_authentication_failed_and_applies_nothing(
    tmp_path: Path, cluster: EmbeddedCluster
) -> None:
    _work, bare = served_repo(tmp_path)
    token_file = tmp_path / "token"
    token_file.write_text("not-the-token-42\n")
    with GitHttpServer(bare.parent, TOKEN) as server:
        url = f"{server.url}/specs.git"
        run = run_process(tmp_path, url, cluster.kubeconfig, "--git-token-file", str(token_file))
        try:
            line = wait_for(
                "the fetch failure in the log",
                lambda: next((ln for ln in run.log().splitlines() if "Authentication failed" in ln), None),
                60,
            )
            assert url in line and "git fetch failed" in line
            assert server.auth_failures > 0 and server.auth_ok == 0
            assert kdapp(cluster, "hello") is None
        finally:
            run.stop()
    assert "not-the-token-42" not in run.log()


@pytest.mark.parametrize("known_hosts", [True, False], ids=["known-hosts", "accept-new"])
def test_ssh_key_over_ssh_url(tmp_path: Path, cluster: EmbeddedCluster, known_hosts: bool) -> None:
    _work, bare = served_repo(tmp_path)
    key, hosts = tmp_path / "id_ed25519", tmp_path / "known_hosts"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----\n")
    hosts.write_text("git.example.test ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeFakeFakeFakeFakeFakeFakeFakeFake\n")
    record = tmp_path / "ssh-args.log"
    fake_ssh(tmp_path / "bin", record)
    flags = ["--ssh-key-file", str(key)] + (["--known-hosts-file", str(hosts)] if known_hosts else [])
    run = run_process(tmp_path, f"ssh://git@git.example.test{bare}", cluster.kubeconfig, *flags, path_prefix=tmp_path / "bin")
    try:
        wait_for("KDApp hello applied over ssh", lambda: kdapp(cluster, "hello"), 60)
    finally:
        code = run.stop()
    assert code == 0, run.log()[-3000:]
    calls = ssh_args(record)
    assert calls, "the ssh on PATH was never run"
    args = calls[0]
    assert has_option(args, "-i", str(key))
    assert has_option(args, "-o", "IdentitiesOnly=yes") and has_option(args, "-o", "BatchMode=yes")
    assert "git@git.example.test" in args and args[-1] == f"git-upload-pack '{bare}'"
    if known_hosts:
        assert has_option(args, "-o", f"UserKnownHostsFile={hosts}")
        assert has_option(args, "-o", "StrictHostKeyChecking=yes")
        assert not any("accept-new" in a for a in args)
    else:
        assert has_option(args, "-o", "StrictHostKeyChecking=accept-new")
        assert not any(a.startswith("UserKnownHostsFile=") for a in args)


KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: k8s}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def _run_cli(tmp: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    return subprocess.run(
        [
            *CLI,
            "run",
            "--repo",
            "https://git.example.test/specs.git",
            "--kubeconfig",
            str(kubeconfig),
            "--listen",
            "off",
            "--no-leader-elect",
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp,
    )


def _credential_case(tmp: Path, case: str) -> tuple[list[str], str]:
    """The flags for one broken-credentials case and the message expected on stderr."""
    key, hosts, token = tmp / "key", tmp / "known_hosts", tmp / "token"
    if case == "missing key":
        return ["--ssh-key-file", str(key)], f"--ssh-key-file {key}: no such file"
    if case == "empty key":
        key.write_text("")
        return ["--ssh-key-file", str(key)], f"--ssh-key-file {key}: the file is empty"
    if case == "empty known_hosts":
        key.write_text("k\n")
        hosts.write_text("")
        return (["--ssh-key-file", str(key), "--known-hosts-file", str(hosts)], f"--known-hosts-file {hosts}: the file is empty")
    if case == "dangling token link":
        token.symlink_to(tmp / "gone")
        return ["--git-token-file", str(token)], f"--git-token-file {token}: no such file"
    if case == "blank token":
        token.write_text("  \n")
        return ["--git-token-file", str(token)], f"--git-token-file {token}: the file is empty"
    if case == "blank token in a mounted Secret":
        secret = tmp / "secret"
        secret.mkdir()
        (secret / "token").write_text("\n")
        return (
            ["--git-credentials-dir", str(secret)],
            f"--git-token-file {secret / 'token'}: the file is empty (a file of --git-credentials-dir {secret})",
        )
    if case == "unreadable token":
        token.write_text("t\n")
        token.chmod(0)
        return ["--git-token-file", str(token)], f"--git-token-file {token}: cannot be read (Permission denied)"
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case",
    [
        "missing key",
        "empty key",
        "empty known_hosts",
        "dangling token link",
        "blank token",
        "blank token in a mounted Secret",
        pytest.param("unreadable token", marks=pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")),
    ],
)
def test_unusable_credential_file_names_flag_and_file(tmp_path: Path, case: str) -> None:
    flags, message = _credential_case(tmp_path, case)
    done = _run_cli(tmp_path, *flags)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr


def test_plan_reads_a_private_remote_with_the_same_credential_flags(tmp_path: Path) -> None:
    _work, bare = served_repo(tmp_path)
    good, bad = tmp_path / "good-token", tmp_path / "bad-token"
    good.write_text(TOKEN + "\n")
    bad.write_text("not-the-token-42\n")
    with GitHttpServer(bare.parent, TOKEN) as server:
        url = f"{server.url}/specs.git"
        base = [*CLI, "plan", "--offline", "--repo", url]
        planned = subprocess.run([*base, "--git-token-file", str(good)], capture_output=True, text=True, timeout=60)
        refused = subprocess.run([*base, "--git-token-file", str(bad)], capture_output=True, text=True, timeout=60)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "1. apply KubeDirectorApp default/hello at version 1.0.0" in planned.stdout, planned.stdout
    assert refused.returncode == 2 and "Authentication failed" in refused.stderr, refused.stderr
    assert TOKEN not in planned.stdout + planned.stderr + refused.stdout + refused.stderr
