"""The release process (issue 29, 6): the version lives in one place, every pin the templates carry names it, and
the pin exists once released: `scripts/release.py` tags it, and pip installs gitops-kd from the tag exactly as the
repo-template CI job does (`git+URL@vVERSION`)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from gitops_kd import __version__
from tests.e2e.harness import ROOT, git

RELEASE = "scripts/release.py"


def _release(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(repo / RELEASE), *args], capture_output=True, text=True, timeout=60, check=False)


def _clone(tmp: Path) -> Path:
    repo = tmp / "gitops-kd"
    git(tmp, "clone", "-q", str(ROOT), str(repo))
    git(repo, "config", "user.email", "release@example.com")
    git(repo, "config", "user.name", "release")
    return repo


def test_the_package_reports_the_one_version() -> None:
    metadata = subprocess.run(
        [sys.executable, "-c", "import importlib.metadata as m; print(m.version('gitops-kd'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert metadata.stdout.strip() == __version__  # pyproject reads the version from gitops_kd/__init__.py


def test_check_needs_the_pinned_tag_and_tag_creates_it(tmp_path: Path) -> None:
    """A fresh clone carries no tag (main has none to carry): check names the missing tag; `tag` creates it at the
    commit that wrote the version, and then every pin, the CHANGELOG section and the tag agree."""
    repo = _clone(tmp_path)
    missing = _release(repo, "check")
    assert missing.returncode == 1 and f"tag v{__version__} (pinned by the repo-template" in missing.stderr, missing.stderr
    made = _release(repo, "tag")
    assert made.returncode == 0 and f"tag v{__version__}" in made.stdout, made.stderr
    at = git(repo, "rev-list", "-n1", f"v{__version__}")
    assert f'__version__ = "{__version__}"' in git(repo, "show", f"{at}:gitops_kd/__init__.py")
    done = _release(repo, "check")
    assert done.returncode == 0, done.stderr


def test_check_fails_when_the_chart_disagrees(tmp_path: Path) -> None:
    repo = _clone(tmp_path)
    _release(repo, "tag")
    chart = repo / "charts/gitops-kd/Chart.yaml"
    chart.write_text(chart.read_text().replace(f'appVersion: "{__version__}"', 'appVersion: "0.0.9"'))
    done = _release(repo, "check")
    assert done.returncode == 1 and "charts/gitops-kd/Chart.yaml:" in done.stderr and "pins 0.0.9" in done.stderr


def test_0_1_0_does_not_name_todays_code() -> None:
    """The chart and GITOPS_KD_<FLAG> came after 0.1.0: the version is past it and its section lists them."""
    assert __version__ != "0.1.0"
    section = (ROOT / "CHANGELOG.md").read_text().split(f"## {__version__}", 1)[1].split("\n## ", 1)[0]
    assert "GITOPS_KD_<FLAG>" in section and "Helm chart" in section, section[:500]


def test_the_pinned_tag_installs_as_the_template_installs_it(tmp_path: Path) -> None:
    repo = _clone(tmp_path)
    tagged = _release(repo, "tag")
    assert tagged.returncode == 0 and f"tag v{__version__}" in tagged.stdout, tagged.stderr
    workflow = (repo / "repo-template/.github/workflows/gitops-kd.yaml").read_text()
    pin = re.search(r"'(git\+https://\S+@(v\S+))'", workflow)
    assert pin is not None and pin.group(2) == f"v{__version__}", workflow
    target = tmp_path / "installed"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), f"git+file://{repo}@{pin.group(2)}"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert (target / f"gitops_kd-{__version__}.dist-info").is_dir(), sorted(p.name for p in target.iterdir())
    assert f'__version__ = "{__version__}"' in (target / "gitops_kd/__init__.py").read_text()


def test_a_new_release_moves_every_pin_and_needs_its_changelog(tmp_path: Path) -> None:
    repo = _clone(tmp_path)
    refused = _release(repo, "9.8.7")
    assert refused.returncode == 1 and "CHANGELOG.md: no section `## 9.8.7`" in refused.stderr, refused.stderr
    changelog = repo / "CHANGELOG.md"
    changelog.write_text(changelog.read_text().replace("## Unreleased", "## 9.8.7 (next)", 1))
    git(repo, "commit", "-qam", "changelog for 9.8.7")
    done = _release(repo, "9.8.7")
    assert done.returncode == 0, done.stderr
    assert git(repo, "describe", "--tags", "--exact-match", "HEAD") == "v9.8.7"
    assert git(repo, "log", "-1", "--format=%s") == "Release 9.8.7"
    assert _release(repo, "check").returncode == 0
    assert f"@v{__version__}" not in (repo / "repo-template/README.md").read_text()
    again = _release(repo, "9.8.7")  # idempotent: the tag is already at HEAD
    assert again.returncode == 0, again.stderr
