"""KubeDirector's persisted-directory rule: which member dirs live on the role's PVC."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

# pkg/executor/statefulset.go: defaultMountFolders, appConfigDefaultMountFolders,
# appConfigLegacyDefaultMountFolders.
DEFAULT_DIRS: tuple[str, ...] = ("/etc",)
SETUP_PACKAGE_DIRS: tuple[str, ...] = (
    "/etc",
    "/opt/guestconfig",
    "/var/log/guestconfig",
    "/usr/local/bin",
    "/usr/local/lib",
)
LEGACY_SETUP_PACKAGE_DIRS: tuple[str, ...] = ("/etc", "/opt", "/usr")


def base_dirs(has_setup_package: bool, new_setup_layout: bool) -> tuple[str, ...]:
    """The dirs KubeDirector always persists for a role, given its config package."""
    if not has_setup_package:
        return DEFAULT_DIRS
    return SETUP_PACKAGE_DIRS if new_setup_layout else LEGACY_SETUP_PACKAGE_DIRS


def is_within(path: str, parent: str) -> bool:
    """True if path equals parent or lies below it ("/etc/x" within "/etc"; "/etcd" is not)."""
    rel = posixpath.relpath(posixpath.normpath(path), posixpath.normpath(parent))
    return not rel.startswith("..")


def effective_persist_dirs(defaults: Sequence[str], app_dirs: Sequence[str] | None) -> tuple[str, ...]:
    """KubeDirector's union of default and app persist dirs, in its order.

    A default dir is kept unless it is below another default or an app dir, or repeats an
    earlier default. An app dir is kept unless it is below another app dir or a default,
    equals a default, or repeats an earlier app dir. ``app_dirs`` is the role's persistDirs,
    or the app's defaultPersistDirs when the role has none (None: neither is set).
    """
    result: list[str] = []
    others = list(app_dirs or ())
    _add(result, list(defaults), others, check_other_dups=False)
    _add(result, others, list(defaults), check_other_dups=True)
    return tuple(result)


def _add(result: list[str], source: list[str], other: list[str], check_other_dups: bool) -> None:
    for index, directory in enumerate(source):
        if _covered(index, directory, source, other, check_other_dups):
            continue
        result.append(posixpath.normpath(directory))


def _covered(index: int, directory: str, source: list[str], other: list[str], check_other_dups: bool) -> bool:
    for other_index, candidate in enumerate(source):
        if is_within(directory, candidate):
            if posixpath.normpath(directory) != posixpath.normpath(candidate):
                return True
            if other_index < index:
                return True
    for candidate in other:
        if is_within(directory, candidate):
            if posixpath.normpath(directory) != posixpath.normpath(candidate):
                return True
            if check_other_dups:
                return True
    return False
