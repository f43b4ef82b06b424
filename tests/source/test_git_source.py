"""GitSource over real git repos: first read, incremental re-read, change sets, apply and restart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gitops_kd.source import GitSource, SourceError
from gitops_kd.source.state_file import STATE_FILE_NAME

from .conftest import WorkRepo, app_yaml, cluster_yaml

HELLO = ("default", "hello")
DEV = ("default", "hello-dev")


def test_first_poll_reads_everything_and_ignores_non_manifests(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        result = source.poll()
        assert result.accepted and result.changed and result.errors == ()
        assert result.commit == repo.git("rev-parse", "HEAD")
        assert result.desired is not None and result.desired.commit == result.commit
        assert list(result.desired.apps) == [HELLO]
        assert result.desired.apps[HELLO].version == "1.0.0"
        assert result.desired.clusters[DEV].app == "hello"
        # examples/ and README.md are not read; the change set lists only what matters
        assert result.changes.added == ("apps/hello.yaml", "clusters/hello-dev.yaml")
        assert result.changes.apps_changed == {HELLO} and result.changes.clusters_changed == {DEV}
        assert sorted(source.cache.parsed_paths) == ["apps/hello.yaml", "clusters/hello-dev.yaml"]
        assert source.last_good == result.desired


def test_unchanged_head_is_cheap(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        first = source.poll()
        parses = source.parse_count
        again = source.poll()
        assert not again.changed and again.commit == first.commit and again.accepted
        assert again.desired == first.desired
        assert source.parse_count == parses


def test_add_modify_rename_delete_reparse_only_changed_files(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        source.mark_applied(source.poll().commit)

        # modify: hello 1.0.0 -> 2.0.0, plus a README edit that must not matter
        repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
        repo.write("README.md", "# changed\n")
        repo.commit("hello 2.0.0")
        before = len(source.cache.parsed_paths)
        result = source.poll()
        assert result.accepted and result.desired.apps[HELLO].version == "2.0.0"
        assert result.changes.modified == ("apps/hello.yaml",)
        assert result.changes.added == result.changes.deleted == () and result.changes.renamed == ()
        assert result.changes.apps_changed == {HELLO} and result.changes.clusters_changed == frozenset()
        assert source.cache.parsed_paths[before:] == ["apps/hello.yaml"]
        source.mark_applied(result.commit)

        # add a second app and cluster
        repo.write("apps/team/web.yml", app_yaml("web", "0.1.0"))
        repo.write("clusters/web-prod.yaml", cluster_yaml("web-prod", "web", members=2))
        repo.commit("add web")
        before = len(source.cache.parsed_paths)
        result = source.poll()
        assert result.accepted
        assert result.changes.added == ("apps/team/web.yml", "clusters/web-prod.yaml")
        assert result.changes.apps_changed == {("default", "web")}
        assert result.changes.clusters_changed == {("default", "web-prod")}
        assert sorted(source.cache.parsed_paths[before:]) == ["apps/team/web.yml", "clusters/web-prod.yaml"]
        source.mark_applied(result.commit)

        # rename without content change: a path change but no app change
        repo.move("apps/team/web.yml", "apps/web.yaml")
        repo.commit("rename")
        result = source.poll()
        assert result.accepted and result.changes.renamed == (("apps/team/web.yml", "apps/web.yaml"),)
        assert result.changes.apps_changed == frozenset()
        assert result.desired.apps[("default", "web")].source == "apps/web.yaml"
        source.mark_applied(result.commit)

        # delete the web cluster and app
        repo.remove("clusters/web-prod.yaml")
        repo.remove("apps/web.yaml")
        repo.commit("drop web")
        before = len(source.cache.parsed_paths)
        result = source.poll()
        assert result.accepted
        assert result.changes.deleted == ("apps/web.yaml", "clusters/web-prod.yaml")
        assert result.changes.apps_changed == {("default", "web")}
        assert set(result.desired.apps) == {HELLO} and set(result.desired.clusters) == {DEV}
        assert source.cache.parsed_paths[before:] == []


def test_change_set_is_relative_to_the_applied_commit(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        first = source.poll()
        source.mark_applied(first.commit)
        repo.write("apps/hello.yaml", app_yaml("hello", "1.1.0"))
        repo.commit("1.1.0")
        assert source.poll().changes.apps_changed == {HELLO}
        # not marked applied: the next commit still diffs against the first one
        repo.write("apps/web.yaml", app_yaml("web"))
        repo.commit("web")
        result = source.poll()
        assert result.changes.added == ("apps/web.yaml",)
        assert result.changes.modified == ("apps/hello.yaml",)
        assert result.changes.apps_changed == {HELLO, ("default", "web")}


def test_restart_remembers_applied_commit(repo: WorkRepo, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with GitSource(repo.url, "main", cache) as source:
        applied = source.poll().commit
        source.mark_applied(applied)
    saved = json.loads((cache / STATE_FILE_NAME).read_text())
    assert saved["applied_commit"] == applied and saved["branch"] == "main"

    repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
    repo.commit("2.0.0")
    with GitSource(repo.url, "main", cache) as restarted:
        assert restarted.applied_commit == applied
        result = restarted.poll()
        assert result.changes.modified == ("apps/hello.yaml",) and result.changes.added == ()
        assert result.changes.apps_changed == {HELLO}


def test_restart_with_bad_head_keeps_applied_state_as_last_good(repo: WorkRepo, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with GitSource(repo.url, "main", cache) as source:
        applied = source.poll().commit
        source.mark_applied(applied)
    repo.write("apps/hello.yaml", "kind: [unclosed\n")
    repo.commit("broken")
    with GitSource(repo.url, "main", cache) as restarted:
        result = restarted.poll()
        assert not result.accepted
        assert result.desired is not None and result.desired.commit == applied
        assert result.desired.apps[HELLO].version == "1.0.0"


def test_desired_at_and_changes_between(repo: WorkRepo, tmp_path: Path) -> None:
    v1 = repo.git("rev-parse", "HEAD")
    repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
    v2 = repo.commit("2.0.0")
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        assert source.desired_at(v1).apps[HELLO].version == "1.0.0"
        assert source.desired_at("HEAD").apps[HELLO].version == "2.0.0"
        assert source.desired_at("HEAD~1").commit == v1
        assert source.desired_at(v2[:10]).commit == v2
        changes = source.changes_between(v1, v2)
        assert changes.modified == ("apps/hello.yaml",) and changes.apps_changed == {HELLO}
        assert source.changes_between(None, v1).added == ("apps/hello.yaml", "clusters/hello-dev.yaml")
        with pytest.raises(SourceError, match="unknown revision"):
            source.desired_at("no-such-rev")


def test_mark_applied_unknown_commit_is_refused(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        source.poll()
        with pytest.raises(SourceError, match="unknown revision"):
            source.mark_applied("f" * 40)
        assert source.applied_commit is None


def test_git_daemon_url(repo: WorkRepo, git_daemon: tuple[Path, str], tmp_path: Path) -> None:
    base, url = git_daemon
    served = base / "specs.git"
    repo.git("clone", "-q", "--bare", str(repo.path), str(served))
    with GitSource(f"{url}/specs.git", "main", tmp_path / "cache") as source:
        first = source.poll()
        assert first.accepted and first.desired.apps[HELLO].version == "1.0.0"
        source.mark_applied(first.commit)
        repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
        repo.commit("2.0.0")
        repo.git("push", "-q", str(served), "main")
        second = source.poll()
        assert second.changed and second.desired.apps[HELLO].version == "2.0.0"
        assert second.changes.modified == ("apps/hello.yaml",)


def test_fetch_failure_keeps_last_good(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        good = source.poll()
        shutil.rmtree(repo.path)
        failed = source.poll()
        assert not failed.accepted and not failed.changed
        assert failed.desired == good.desired and failed.commit == good.commit
        assert failed.errors[0].file == repo.url and "fetch failed" in failed.errors[0].reason


def test_missing_branch_is_an_error_result(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "release", tmp_path / "cache") as source:
        result = source.poll()
        assert not result.accepted and result.desired is None
        assert "branch 'release' not found" in result.errors[0].reason


def test_default_namespace_fills_keys(repo: WorkRepo, tmp_path: Path) -> None:
    repo.write("apps/other.yaml", app_yaml("other", namespace="team-a"))
    repo.commit("other")
    with GitSource(repo.url, "main", tmp_path / "cache", default_namespace="kd") as source:
        desired = source.poll().desired
        assert set(desired.apps) == {("kd", "hello"), ("team-a", "other")}
        assert desired.apps[("kd", "hello")].namespace is None


def test_plain_path_url_and_move_into_examples(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(str(repo.path), "main", tmp_path / "cache") as source:
        source.mark_applied(source.poll().commit)
        repo.move("clusters/hello-dev.yaml", "examples/hello-dev.yaml")
        repo.commit("park the cluster")
        result = source.poll()
        assert result.accepted and result.changes.deleted == ("clusters/hello-dev.yaml",)
        assert result.changes.renamed == () and result.changes.clusters_changed == {DEV}
        assert result.desired.clusters == {}


def test_state_file_corrupt_is_ignored(repo: WorkRepo, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / STATE_FILE_NAME).write_text("{not json")
    with GitSource(repo.url, "main", cache) as source:
        assert source.applied_commit is None
        assert source.poll().accepted


def test_an_outage_logs_one_warning_then_debug_until_a_poll_works(
    repo: WorkRepo, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        assert source.poll().accepted
        hidden = repo.path.with_name("hidden")
        repo.path.rename(hidden)
        caplog.set_level("DEBUG", logger="gitops_kd.source.git_source")
        for _ in range(3):
            assert not source.poll().accepted
        failed = [r for r in caplog.records if "git source poll failed" in r.getMessage()]
        assert [r.levelname for r in failed] == ["WARNING", "DEBUG", "DEBUG"]
        hidden.rename(repo.path)
        assert source.poll().accepted
        assert any(r.levelname == "INFO" and "works again after 3 failed poll(s)" in r.getMessage() for r in caplog.records)
