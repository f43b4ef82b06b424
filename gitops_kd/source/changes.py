"""Build a ChangeSet from git's raw diff (paths that matter) and two sets of keyed specs (keys)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from gitops_kd.source.gitrepo import RawChange
from gitops_kd.source.layout import relevant
from gitops_kd.source.model import ChangeSet, Key
from gitops_kd.source.snapshot import content


def changed_keys(old: Mapping[Key, object], new: Mapping[Key, object], only: Collection[Key] | None = None) -> frozenset[Key]:
    """Keys added, removed, or whose spec content differs (where a spec was read from is ignored).

    ``only``: compare just these keys (the keys defined in the files git names as changed; every
    other key has the same definitions in both commits). None compares every key.
    """
    keys = set(old) | set(new) if only is None else {k for k in only if k in old or k in new}
    return frozenset(k for k in keys if k not in old or k not in new or content(old[k]) != content(new[k]))


def change_set(
    raw: Iterable[RawChange],
    old_apps: Mapping[Key, object],
    new_apps: Mapping[Key, object],
    old_clusters: Mapping[Key, object],
    new_clusters: Mapping[Key, object],
    *,
    only: Collection[Key] | None = None,
) -> ChangeSet:
    """Sort git's changes into added/modified/deleted/renamed, keeping only paths that can matter.

    A rename whose one side is irrelevant (e.g. apps/x.yaml -> examples/x.yaml) counts as a
    deletion or an addition of the relevant side. ``only`` limits the spec comparison to these keys
    (see changed_keys).
    """
    added: list[str] = []
    modified: list[str] = []
    deleted: list[str] = []
    renamed: list[tuple[str, str]] = []
    for change in raw:
        old_ok = change.old_path is not None and relevant(change.old_path)
        new_ok = change.new_path is not None and relevant(change.new_path)
        if change.status == "R":
            assert change.old_path is not None and change.new_path is not None
            if old_ok and new_ok:
                renamed.append((change.old_path, change.new_path))
            elif old_ok:
                deleted.append(change.old_path)
            elif new_ok:
                added.append(change.new_path)
        elif change.status == "A" and new_ok:
            added.append(change.new_path)  # type: ignore[arg-type]
        elif change.status == "D" and old_ok:
            deleted.append(change.old_path)  # type: ignore[arg-type]
        elif change.status in ("M", "T") and new_ok:
            modified.append(change.new_path)  # type: ignore[arg-type]
    return ChangeSet(
        added=tuple(sorted(added)),
        modified=tuple(sorted(modified)),
        deleted=tuple(sorted(deleted)),
        renamed=tuple(sorted(renamed)),
        apps_changed=changed_keys(old_apps, new_apps, only),
        clusters_changed=changed_keys(old_clusters, new_clusters, only),
    )
