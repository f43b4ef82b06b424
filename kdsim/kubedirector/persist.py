"""Which member directories KubeDirector puts on the role's PVC, and the init script that seeds them (pure)."""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Sequence

from kdsim.kubedirector import names
from kdsim.kubedirector.model import AppRole

# pkg/executor/statefulset.go: always persisted; replaced by the config-package sets when the role has one.
DEFAULT_DIRS: tuple[str, ...] = ("/etc",)
CONFIG_PACKAGE_DIRS: tuple[str, ...] = ("/etc", "/opt/guestconfig", "/var/log/guestconfig", "/usr/local/bin", "/usr/local/lib")
LEGACY_CONFIG_PACKAGE_DIRS: tuple[str, ...] = ("/etc", "/opt", "/usr")


def _relation(parent: str, child: str) -> str:
    """ "same", "sub" (child is strictly below parent) or "" (unrelated)."""
    p, c = posixpath.normpath(parent), posixpath.normpath(child)
    if p == c:
        return "same"
    if c.startswith(p.rstrip("/") + "/"):
        return "sub"
    return ""


def _add(out: list[str], source: Sequence[str], other: Sequence[str], other_dups: bool) -> None:
    for i, d in enumerate(source):
        covered = False
        for j, o in enumerate(source):
            rel = _relation(o, d)
            if rel == "sub" or (rel == "same" and j < i):
                covered = True
                break
        if not covered:
            for o in other:
                rel = _relation(o, d)
                if rel == "sub" or (rel == "same" and other_dups):
                    covered = True
                    break
        if not covered:
            out.append(posixpath.normpath(d))


def default_dirs(app_role: AppRole) -> tuple[str, ...]:
    """The built-in persisted set for a role: /etc, or the config-package layout's set."""
    pkg = app_role.setup_package
    if pkg is None:
        return DEFAULT_DIRS
    return CONFIG_PACKAGE_DIRS if pkg.use_new_setup_layout else LEGACY_CONFIG_PACKAGE_DIRS


def persist_dirs(app_role: AppRole) -> tuple[str, ...]:
    """Built-in dirs first, then the app role's persistDirs; a dir below (or equal to) another listed one is skipped."""
    defaults = default_dirs(app_role)
    app_dirs = list(app_role.persist_dirs or ())
    out: list[str] = []
    _add(out, defaults, app_dirs, other_dups=False)
    _add(out, app_dirs, defaults, other_dups=True)
    return tuple(out)


def init_script(dirs: Sequence[str]) -> str:
    """Shell run by the init container: unless the marker exists on the PVC, copy each persisted dir into /mnt.

    Like KD's `rsync -ax --relative` / `cp --parent -ax`, the copy keeps full paths and attributes; a dir
    missing from the image is skipped (KD's script carries on too), and /mnt/etc/kubedirector.init is touched
    so that a re-created member never re-seeds its PVC. Differences for the embedded kubelet: read-only
    subtrees (the host's /bin, /usr, /lib bound into the sandbox, not image content) are pruned, and the
    copy is find + tar, which work with the host's GNU tools in the chroot.
    """
    quoted = " ".join(shlex.quote(d.lstrip("/") or ".") for d in dirs)
    marker = shlex.quote("/mnt" + names.INIT_MARKER)
    return (
        f"if ! [ -f {marker} ]; then "
        f"cd / || exit 1; "
        f"for d in {quoted}; do "
        f'[ -e "$d" ] || continue; '
        f'find "$d" \\( ! -type l ! -writable -prune \\) -o -print0 '
        f"| tar --null --no-recursion -cf - -T - | tar -xpf - -C /mnt || exit 1; "
        f"done; "
        f"mkdir -p /mnt/etc && touch {marker}; "
        f"fi"
    )
