"""Layout rules of the Git source: which tree entries are manifests, ignored, or refused."""

from __future__ import annotations

import pytest

from gitops_kd.source.layout import (
    MODE_SUBMODULE,
    MODE_SYMLINK,
    TreeEntry,
    Verdict,
    classify,
    relevant,
    symlink_escapes,
)
from gitops_kd.spec.limits import MAX_FILE_BYTES

SHA = "0" * 40


def entry(path: str, mode: str = "100644", size: int | None = 10) -> TreeEntry:
    return TreeEntry(path, mode, SHA, size)


@pytest.mark.parametrize(
    "path", ["apps/hello.yaml", "apps/team/a/b.yml", "clusters/x.json", "clusters/deep/er/x.YAML", "apps/run.yaml"]
)
def test_manifests_under_apps_and_clusters(path: str) -> None:
    assert classify(entry(path)).verdict is Verdict.MANIFEST


@pytest.mark.parametrize(
    "path",
    [
        "README.md",
        "LICENSE",
        ".gitignore",
        "examples/hello-2.0.0.yaml",
        "docs/app.yaml",
        "docs/x/y.json",
        "apps/README.md",
        "clusters/.gitkeep",
        ".github/workflows/gitops-kd.yaml",
        ".gitlab-ci.yml",
        ".pre-commit-config.yaml",
        "scripts/run.sh",
    ],
)
def test_ignored(path: str) -> None:
    placement = classify(entry(path))
    assert placement.verdict is Verdict.IGNORED and placement.error is None


@pytest.mark.parametrize("path", ["hello.yaml", "config/app.yml", "other/x.json", "appsx/a.yaml"])
def test_manifest_outside_allowed_folders_is_refused(path: str) -> None:
    placement = classify(entry(path))
    assert placement.verdict is Verdict.REFUSED
    assert placement.error is not None and placement.error.file == path
    assert "manifest outside apps/ and clusters/" in str(placement.error)


def test_oversized_manifest_refused_but_limit_itself_allowed() -> None:
    assert classify(entry("apps/a.yaml", size=MAX_FILE_BYTES)).verdict is Verdict.MANIFEST
    placement = classify(entry("apps/a.yaml", size=MAX_FILE_BYTES + 1))
    assert placement.verdict is Verdict.REFUSED
    assert "1 MiB" in placement.error.reason and str(MAX_FILE_BYTES + 1) in placement.error.reason


@pytest.mark.parametrize(
    "path,target,escapes",
    [
        ("apps/a.yaml", "../../etc/passwd", True),
        ("apps/a.yaml", "/etc/passwd", True),
        ("apps/sub/a.yaml", "../../../x.yaml", True),
        ("apps/a.yaml", "../clusters/c.yaml", False),
        ("apps/sub/a.yaml", "../b.yaml", False),
        ("apps/a.yaml", "b.yaml", False),
    ],
)
def test_symlink_escape_detection(path: str, target: str, escapes: bool) -> None:
    assert symlink_escapes(path, target) is escapes


def test_every_symlink_under_roots_is_refused_with_reason() -> None:
    escaping = classify(entry("apps/a.yaml", MODE_SYMLINK), "../../etc/passwd")
    assert escaping.verdict is Verdict.REFUSED and "leaves the repository" in escaping.error.reason
    inside = classify(entry("clusters/c.yaml", MODE_SYMLINK), "../apps/a.yaml")
    assert inside.verdict is Verdict.REFUSED and "symlinks are not allowed" in inside.error.reason
    root_link = classify(entry("apps", MODE_SYMLINK), "/tmp")
    assert root_link.verdict is Verdict.REFUSED
    assert classify(entry("docs/link.yaml", MODE_SYMLINK), "/etc").verdict is Verdict.IGNORED


def test_submodule_under_roots_refused() -> None:
    placement = classify(entry("apps/vendor", MODE_SUBMODULE, None))
    assert placement.verdict is Verdict.REFUSED and "submodule" in placement.error.reason


def test_relevant_paths() -> None:
    assert relevant("apps/a.yaml") and relevant("stray.yaml") and relevant("clusters/notes.txt")
    assert not relevant("README.md") and not relevant("examples/a.yaml") and not relevant("docs/a.json")
