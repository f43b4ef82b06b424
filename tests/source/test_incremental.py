"""Incremental polls: remembered snapshots and change sets built from the paths git names as changed."""

from __future__ import annotations

from pathlib import Path

from gitops_kd.source import GitSource
from gitops_kd.source.changes import change_set
from gitops_kd.source.snapshot import derive_snapshot, keyed, read_snapshot

from .conftest import WorkRepo, app_yaml, cluster_yaml

HELLO = ("default", "hello")
OTHER = ("default", "other")


def _full_change_set(source: GitSource, old: str, new: str):
    """The change set comparing every spec of both commits (the reference the incremental one must equal)."""
    ns = source.default_namespace
    old_snap, new_snap = source._snapshot(old), source._snapshot(new)
    old_apps, old_clusters = keyed(old_snap, ns)
    new_apps, new_clusters = keyed(new_snap, ns)
    return change_set(source._git.diff(old, new), old_apps, new_apps, old_clusters, new_clusters)


def test_change_sets_equal_the_full_comparison_across_edits(repo: WorkRepo, tmp_path: Path) -> None:
    commits = [repo.git("rev-parse", "HEAD")]
    repo.write("apps/other.yaml", app_yaml("other"))
    commits.append(repo.commit("add other"))
    repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
    commits.append(repo.commit("modify hello"))
    repo.move("apps/other.yaml", "apps/renamed.yaml")
    commits.append(repo.commit("rename, same content"))
    repo.remove("apps/renamed.yaml")
    repo.write("apps/both.yaml", app_yaml("other", "3.0.0") + "---\n" + cluster_yaml("other-dev", "other"))
    commits.append(repo.commit("move other into a multi-document file and change it"))
    repo.write("clusters/hello-dev.yaml", cluster_yaml("hello-dev", "hello", members=2))
    repo.write("README.md", "# irrelevant\n")
    commits.append(repo.commit("resize cluster"))
    repo.remove("apps/both.yaml")
    commits.append(repo.commit("delete"))
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        for old in commits:
            for new in commits:
                got = source.changes_between(old, new)
                assert got == _full_change_set(source, old, new), (old, new)
        assert source.changes_between(commits[2], commits[3]).apps_changed == frozenset()  # a pure rename
        assert source.changes_between(commits[3], commits[4]).apps_changed == {OTHER}


def test_the_applied_snapshot_is_remembered_until_its_files_leave_the_cache(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        first = source.poll().commit
        source.mark_applied(first)
        assert source.cache.snapshot(first, "default") is not None
        repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
        second = repo.commit("hello 2.0.0")
        parses = source.parse_count
        result = source.poll()
        assert result.accepted and result.changes.apps_changed == {HELLO}
        assert source.parse_count == parses + 1  # only the changed file
        source.mark_applied(second)

        # an emptied parse cache (a restart) drops the remembered snapshots too: everything is re-read
        source.cache.retain(())
        assert source.cache.snapshot(second, "default") is None
        repo.write("apps/hello.yaml", app_yaml("hello", "3.0.0"))
        repo.commit("hello 3.0.0")
        parses = source.parse_count
        result = source.poll()
        assert result.accepted and result.desired.apps[HELLO].version == "3.0.0"
        assert result.changes.apps_changed == {HELLO}
        assert source.parse_count == parses + 3  # applied commit (2 files), new head (its changed file)


def test_a_remembered_snapshot_is_per_commit(repo: WorkRepo, tmp_path: Path) -> None:
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        old = source.poll().commit
        source.mark_applied(old)
        repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0"))
        repo.commit("hello 2.0.0")
        assert source.poll().desired.apps[HELLO].version == "2.0.0"
        assert source.desired_at(old).apps[HELLO].version == "1.0.0"
        repo.write("apps/hello.yaml", app_yaml("hello", "2.0.0", image="docker.io/library/busybox:1.37"))
        repo.commit("same version, new image")
        result = source.poll()
        assert result.desired.apps[HELLO].default_image == "docker.io/library/busybox:1.37"
        assert result.changes.apps_changed == {HELLO}


def test_a_derived_snapshot_equals_reading_the_whole_tree(repo: WorkRepo, tmp_path: Path) -> None:
    commits = [repo.git("rev-parse", "HEAD")]
    repo.write("apps/a.yaml", app_yaml("a"))
    repo.write("apps/b.yaml", app_yaml("b"))
    repo.write("apps/notes.txt", "not a manifest\n")
    commits.append(repo.commit("add a, b and a non-manifest"))
    repo.move("apps/b.yaml", "apps/c.yaml")
    repo.move("apps/a.yaml", "apps/b.yaml")
    commits.append(repo.commit("rename chain a -> b -> c"))
    repo.write("apps/big.yaml", app_yaml("big") + "# " + "x" * (1024 * 1024) + "\n")
    commits.append(repo.commit("a manifest over the size limit"))
    repo.remove("apps/big.yaml")
    repo.write("stray.yaml", app_yaml("stray"))
    commits.append(repo.commit("a manifest outside apps/ and clusters/"))
    repo.remove("stray.yaml")
    repo.remove("apps/c.yaml")
    repo.symlink("apps/c.yaml", "b.yaml")
    commits.append(repo.commit("a symlink under apps/"))
    repo.remove("apps/c.yaml")
    repo.write("apps/b.yaml", app_yaml("a", "2.0.0") + "---\n" + cluster_yaml("a-dev", "a"))
    repo.write("examples/more.yaml", app_yaml("ignored"))
    commits.append(repo.commit("back to good, a multi-document file, an ignored example"))
    derived = 0
    with GitSource(repo.url, "main", tmp_path / "cache") as source:
        source.fetch()
        git, cache, ns = source._git, source.cache, source.default_namespace
        for old in commits:
            base = read_snapshot(old, git.list_tree(old), cache, git.read_blob, ns)
            for new in commits:
                whole = read_snapshot(new, git.list_tree(new), cache, git.read_blob, ns)
                got = derive_snapshot(new, base, git.diff(old, new), cache, git.read_blob, git.blob_size)
                if base.errors:
                    assert got is None
                    continue
                derived += 1
                assert got == whole, (old, new)
                assert got.errors == whole.errors
        assert derived >= 16
