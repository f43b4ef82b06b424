#!/usr/bin/env python3
"""Cut a gitops-kd release: the version lives in gitops_kd/__init__.py only; every pin people copy (the
repo-template CI jobs, the pre-commit example, the controller image) names it; CHANGELOG.md says what it brings.

    scripts/release.py check          every pin names the version, CHANGELOG.md has its section and the tag
                                      vVERSION the pins name exists (exit 1: which not)
    scripts/release.py tag            create the tag vVERSION (annotated) at the commit that wrote the version, when
                                      missing: a fresh clone carries no tag the submission did not push
    scripts/release.py VERSION        write VERSION and its pins, commit "Release VERSION", tag vVERSION (annotated);
                                      for the version already written it only tags (idempotent)

Stdlib only: it runs before any virtualenv exists. Errors name the file, line and reason.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION_FILE = "gitops_kd/__init__.py"
CHANGELOG = "CHANGELOG.md"
SEMVER = r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?"
VERSION_LINE = re.compile(rf'^__version__ = "({SEMVER})"$', re.M)
# (file, pattern whose group 1 is the pinned version): the places a user copies a version from
PINS: tuple[tuple[str, str], ...] = (
    ("repo-template/.github/workflows/gitops-kd.yaml", rf"gitops-kd@v({SEMVER})"),
    ("repo-template/.github/workflows/gitops-kd.yaml", rf'"gitops-kd==({SEMVER})"'),
    ("repo-template/README.md", rf"gitops-kd@v({SEMVER})"),
    (".pre-commit-hooks.yaml", rf"rev: v({SEMVER})"),
    ("docs/reviewing-an-upgrade.md", rf"rev: v({SEMVER})"),
    ("README.md", rf"ghcr\.io/gitops-kd/gitops-kd:({SEMVER})"),
    ("deploy/deployment.yaml", rf"ghcr\.io/gitops-kd/gitops-kd:({SEMVER})"),
    ("deploy/Dockerfile", rf"ghcr\.io/gitops-kd/gitops-kd:({SEMVER})"),
    ("charts/gitops-kd/Chart.yaml", rf"(?m)^version: ({SEMVER})$"),
    ("charts/gitops-kd/Chart.yaml", rf'(?m)^appVersion: "({SEMVER})"$'),
)


class ReleaseError(Exception):
    """A check that failed: printed as `release: <message>`, exit 1."""


def current_version(root: Path) -> str:
    found = VERSION_LINE.search((root / VERSION_FILE).read_text(encoding="utf-8"))
    if found is None:
        raise ReleaseError(f'{VERSION_FILE}: no line `__version__ = "X.Y.Z"`')
    return found.group(1)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def pin_problems(root: Path, version: str) -> list[str]:
    """`file:line: reason` for each pin that names another version, and each pin file where none is found."""
    problems = []
    for rel, pattern in PINS:
        text = (root / rel).read_text(encoding="utf-8")
        matches = list(re.finditer(pattern, text))
        if not matches:
            problems.append(f"{rel}: no pin matching {pattern!r}")
        problems += [
            f"{rel}:{_line_of(text, m.start())}: pins {m.group(1)}, the version is {version}"
            for m in matches
            if m.group(1) != version
        ]
    return problems


def changelog_problem(root: Path, version: str) -> str | None:
    text = (root / CHANGELOG).read_text(encoding="utf-8") if (root / CHANGELOG).exists() else ""
    if not re.search(rf"^## {re.escape(version)}\b", text, re.M):
        return f"{CHANGELOG}: no section `## {version}`: write what the release brings first"
    return None


def _version_commit(root: Path, version: str) -> str:
    """The commit that last wrote ``version`` into VERSION_FILE (the "Release VERSION" commit)."""
    found = _git(root, "log", "-1", "--format=%H", "-G", f'__version__ = "{re.escape(version)}"', "--", VERSION_FILE)
    if not found:
        raise ReleaseError(f"{VERSION_FILE}: no commit wrote version {version}")
    return found


def _tag_commit(root: Path, tag: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


def tag_problem(root: Path, version: str) -> str | None:
    """Why the tag the pins name is unusable (missing, or at a commit with another version), else None."""
    tag = f"v{version}"
    at = _tag_commit(root, tag)
    if not at:
        return f"tag {tag} (pinned by the repo-template and pre-commit examples) does not exist: `scripts/release.py tag`"
    shown = subprocess.run(
        ["git", "-C", str(root), "show", f"{at}:{VERSION_FILE}"], capture_output=True, text=True, check=False
    ).stdout
    found = VERSION_LINE.search(shown)
    if found is None or found.group(1) != version:
        return f"tag {tag} is at {at[:12]}, whose {VERSION_FILE} says {found.group(1) if found else 'no version'}"
    return None


def make_tag(root: Path) -> str:
    """Create vVERSION at the commit that wrote the version (nothing when it exists); the tag's name."""
    version = current_version(root)
    tag = f"v{version}"
    if not _tag_commit(root, tag):
        _git(root, "tag", "-a", tag, "-m", f"gitops-kd {version}", _version_commit(root, version))
    return tag


def _write_version(root: Path, version: str) -> None:
    path = root / VERSION_FILE
    path.write_text(VERSION_LINE.sub(f'__version__ = "{version}"', path.read_text(encoding="utf-8")), encoding="utf-8")
    for rel, pattern in PINS:
        target = root / rel
        text = target.read_text(encoding="utf-8")
        target.write_text(re.sub(pattern, lambda m: m.group(0).replace(m.group(1), version), text), encoding="utf-8")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def release(root: Path, version: str) -> str:
    """Write ``version`` and its pins, commit, tag v``version``; the tag's name."""
    if not re.fullmatch(SEMVER, version):
        raise ReleaseError(f"{version!r} is not a version X.Y.Z")
    if _git(root, "status", "--porcelain", "--untracked-files=no"):
        raise ReleaseError("the work tree has uncommitted changes: commit or drop them first")
    problem = changelog_problem(root, version)
    if problem:
        raise ReleaseError(problem)
    tag = f"v{version}"
    head = _git(root, "rev-parse", "HEAD")
    existing = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if existing and existing != head:
        raise ReleaseError(f"tag {tag} exists at {existing[:12]}, not at HEAD {head[:12]}")
    if current_version(root) != version or pin_problems(root, version):
        _write_version(root, version)
        _git(root, "commit", "-q", "-am", f"Release {version}")
    if not existing:
        _git(root, "tag", "-a", tag, "-m", f"gitops-kd {version}")
    return tag


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if argv[0] == "check":
            version = current_version(ROOT)
            found = [changelog_problem(ROOT, version), tag_problem(ROOT, version)]
            problems = pin_problems(ROOT, version) + [p for p in found if p]
            for problem in problems:
                print(f"release: {problem}", file=sys.stderr)
            if not problems:
                print(f"release: every pin names {version}; {CHANGELOG} has its section; tag v{version} exists")
            return 1 if problems else 0
        if argv[0] == "tag":
            print(f"release: tag {make_tag(ROOT)}")
            return 0
        print(f"release: tagged {release(ROOT, argv[0])}")
        return 0
    except ReleaseError as exc:
        print(f"release: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
