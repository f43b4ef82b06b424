"""Bad input through Git commits to a running, signature-verifying controller: every bad commit is refused
with an error naming the file/field, nothing reaches the cluster, the last good state stays, the controller
stays ready and applies the next good commit."""

from __future__ import annotations

import shutil
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.server.metrics import ControllerMetrics
from gitops_kd.source import MAX_FILE_BYTES, GitSource
from tests.e2e.harness import E2E, KD, NS, git, hello_app, wait_for

pytestmark = pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg is not installed")


class World:
    """E2E world whose repo signs every commit with a key the controller trusts."""

    def __init__(self, tmp: Path) -> None:
        self.e2e = E2E(tmp)
        home = tmp / "gnupg"
        home.mkdir(mode=0o700)
        gpg = ["gpg", "--batch", "--no-tty", "--homedir", str(home)]
        subprocess.run(
            [
                *gpg,
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
                "--quick-gen-key",
                "ci <ci@example.com>",
                "ed25519",
                "sign",
                "never",
            ],
            check=True,
            capture_output=True,
        )
        listing = subprocess.run([*gpg, "--with-colons", "--list-keys"], check=True, capture_output=True, text=True)
        fpr = next(line.split(":")[9] for line in listing.stdout.splitlines() if line.startswith("fpr:"))
        public = subprocess.run([*gpg, "--armor", "--export", fpr], check=True, capture_output=True, text=True).stdout
        program = tmp / "gpg-ci"
        program.write_text(f'#!/bin/sh\nexec gpg --homedir "{home}" "$@"\n')
        program.chmod(0o755)
        self.gpg_home = home
        repo = self.e2e.repo
        git(repo, "config", "gpg.program", str(program))
        git(repo, "config", "user.signingkey", fpr)
        git(repo, "config", "commit.gpgsign", "true")
        git(repo, "commit", "-q", "--amend", "--no-edit")  # the initial commit, signed
        self.metrics = ControllerMetrics()
        source = GitSource(f"file://{repo}", "main", tmp / "cache", trusted_keys=[public])
        self.controller = self.e2e.start_controller(
            source=source, poll_interval=0.3, listen=("127.0.0.1", 0), metrics=self.metrics
        )

    def close(self) -> None:
        self.e2e.close()
        subprocess.run(["gpgconf", "--homedir", str(self.gpg_home), "--kill", "all"], capture_output=True)

    def head(self) -> str:
        return git(self.e2e.repo, "rev-parse", "HEAD")

    def readyz(self) -> int:
        assert self.controller.http is not None
        with urllib.request.urlopen(self.controller.http.url + "/readyz", timeout=5) as r:
            return r.status

    def cluster_state(self) -> dict[str, Any]:
        """What gitops-kd could have changed: KDApps and KDClusters (spec, labels), StatefulSet specs."""
        rest = self.e2e.rest
        out: dict[str, Any] = {}
        for plural in ("kubedirectorapps", "kubedirectorclusters"):
            for o in rest.list(KD, plural, NS)["items"]:
                out[f"{plural}/{o['metadata']['name']}"] = (o["spec"], o["metadata"].get("labels"))
        for o in rest.list("apps/v1", "statefulsets", NS)["items"]:
            out[f"statefulsets/{o['metadata']['name']}"] = o["spec"]
        return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("badinput"))
    try:
        w.e2e.wait_ready_at("1.0.0", timeout=120)
        w.e2e.wait_settled()
        yield w
    finally:
        w.close()


def write(repo: Path, rel: str, text: str) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def billion_laughs() -> str:
    lines = [
        "apiVersion: kubedirector.hpe.com/v1beta1",
        "kind: KubeDirectorApp",
        "metadata: {name: lol}",
        'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
    ]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 12)]
    lines.append("spec: {label: {name: lol}, distroID: x/lol, version: '1.0.0', roles: *l11}")
    return "\n".join(lines) + "\n"


def cluster_of(app: str) -> str:
    doc = yaml.safe_load((Path(__file__).resolve().parents[2] / "repo-template/clusters/hello-dev.yaml").read_text())
    doc["metadata"]["name"] = "orphan"
    doc["spec"]["app"] = app
    return yaml.safe_dump(doc)


def _files(changes: dict[str, str]) -> Callable[[Path], None]:
    def apply(repo: Path) -> None:
        for rel, text in changes.items():
            write(repo, rel, text)

    return apply


def _symlink(rel: str, target: str) -> Callable[[Path], None]:
    def apply(repo: Path) -> None:
        (repo / rel).symlink_to(target)

    return apply


CASES: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "malformed YAML": (
        _files({"apps/broken.yaml": "apiVersion: kubedirector.hpe.com/v1beta1\nkind: [unclosed\n"}),
        ("apps/broken.yaml", "invalid YAML", "line"),
    ),
    "huge file": (
        _files({"apps/big.yaml": hello_app("1.0.0") + "# " + "x" * (MAX_FILE_BYTES + 1024) + "\n"}),
        ("apps/big.yaml",),
    ),
    "YAML bomb": (_files({"apps/bomb.yaml": billion_laughs()}), ("apps/bomb.yaml", "excessive aliasing")),
    "symlink escaping the repo": (_symlink("apps/passwd.yaml", "../../../../../../etc/passwd"), ("apps/passwd.yaml",)),
    "manifest outside apps/ and clusters/": (_files({"stray/app.yaml": hello_app("1.0.0")}), ("stray/app.yaml",)),
    "invalid version": (
        _files(
            {
                "apps/hello.yaml": hello_app("1.0.0")
                .replace("version: 1.0.0", "version: not.a.version")
                .replace("version: '1.0.0'", "version: not.a.version")
            }
        ),
        ("apps/hello.yaml", "version"),
    ),
    "schema violation": (
        _files({"apps/hello.yaml": hello_app("1.0.0").replace("  roles:\n", "  rolez:\n", 1)}),
        ("apps/hello.yaml", "roles"),
    ),
    "duplicate app name": (_files({"apps/copy/hello-again.yaml": hello_app("3.0.0")}), ("apps/copy/hello-again.yaml", "hello")),
    "KDCluster naming a missing app": (
        _files({"clusters/orphan.yaml": cluster_of("no-such-app")}),
        ("clusters/orphan.yaml", "no-such-app"),
    ),
}


def refused(world: World, commit: str, timeout: float = 30) -> tuple[str, ...]:
    def probe() -> tuple[str, ...] | None:
        last = world.controller.refusals.last
        return last[1] if last is not None and last[0] == commit else None

    return wait_for(f"commit {commit[:12]} refused", probe, timeout)


def assert_nothing_applied(world: World, before: dict[str, Any], good: str) -> None:
    assert world.cluster_state() == before
    assert world.controller.desired is not None and world.controller.desired.commit == good
    assert world.controller.source.applied_commit == good
    assert world.readyz() == 200 and world.controller.healthy


@pytest.mark.parametrize("case", list(CASES))
def test_bad_commit_is_refused_naming_the_file_and_nothing_is_applied(world: World, case: str) -> None:
    change, expected = CASES[case]
    repo, good = world.e2e.repo, world.head()
    before = world.cluster_state()
    change(repo)
    bad = world.e2e.commit({}, f"bad: {case}")
    try:
        lines = refused(world, bad)
        text = "\n".join(lines)
        for piece in expected:
            assert piece in text, f"{case}: {piece!r} not in {text!r}"
        assert_nothing_applied(world, before, good)
    finally:
        git(repo, "reset", "-q", "--hard", good)  # back to the applied commit: not a force-push
        git(repo, "clean", "-qfd")


def test_unsigned_commit_is_refused_by_the_trust_policy(world: World) -> None:
    repo, good = world.e2e.repo, world.head()
    before = world.cluster_state()
    write(
        repo,
        "clusters/hello-dev.yaml",
        (repo / "clusters/hello-dev.yaml")
        .read_text()
        .replace('gitops-kd.io/wave: "0"', 'gitops-kd.io/wave: "0"\n    unsigned: "yes"'),
    )
    git(repo, "add", "-A")
    git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "unsigned change")
    bad = world.head()
    world.controller.trigger_poll()
    try:
        text = "\n".join(refused(world, bad))
        assert f"commit {bad}" in text and "signature" in text and "not signed" in text, text
        assert_nothing_applied(world, before, good)
    finally:
        git(repo, "reset", "-q", "--hard", good)


def test_force_push_is_refused(world: World) -> None:
    """The branch rewritten to a history that does not contain the applied commit (same files, even)."""
    repo, good = world.e2e.repo, world.head()
    before = world.cluster_state()
    git(repo, "checkout", "-q", "--orphan", "rewritten")
    git(repo, "commit", "-q", "-m", "rewritten history")
    git(repo, "branch", "-q", "-M", "main")
    bad = world.head()
    world.controller.trigger_poll()
    try:
        text = "\n".join(refused(world, bad))
        assert f"commit {bad}" in text and "history" in text, text
        assert_nothing_applied(world, before, good)
    finally:
        git(repo, "checkout", "-q", "-B", "main", good)


def test_the_next_good_commit_is_applied(world: World) -> None:
    """After every refusal above: a signed, valid commit reaches the cluster."""
    doc = yaml.safe_load((world.e2e.repo / "clusters/hello-dev.yaml").read_text())
    doc["spec"]["roles"][1]["members"] = 3
    text = yaml.safe_dump(doc, sort_keys=False)
    good = world.e2e.commit({"clusters/hello-dev.yaml": text}, "good change after bad input")

    def applied() -> bool:
        o = world.e2e.rest.get(KD, "kubedirectorclusters", NS, "hello-dev")
        return o["spec"]["roles"][1]["members"] == 3

    try:
        wait_for("the good commit applied", applied, 20)
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}; refusals.last={world.controller.refusals.last}; desired="
            f"{world.controller.desired and world.controller.desired.commit}; good={good}; "
            f"plan={world.controller.last_plan}"
        ) from None
    wait_for("applied commit recorded", lambda: world.controller.source.applied_commit == good, 30)
    assert world.readyz() == 200
