"""The upgrade-aware data-handling init script (a constant) and the env that parameterises it (pure).

The script replaces KubeDirector's init script in the ``init`` container, which mounts the member's
PVC at /mnt. It is generic: everything it needs comes from env, so a version bump changes only env.

- ``GITOPS_KD_VERSION``: the app version the member is being started at (required).
- ``GITOPS_KD_FROM_VERSION``: the version a pre-gitops-kd PVC (no data version yet) holds; empty
  when unknown (the data is then taken to be at the target already: adoption).
- ``GITOPS_KD_DIRS``: ``action=/dir`` words, one per persisted dir (and finer rules below them),
  parents before children; action is keep | discard | migrate | restore.
- ``GITOPS_KD_ROOT`` (default ``/``) and ``GITOPS_KD_MNT`` (default ``/mnt``): the image root and
  the PVC mount, so the script can be tested outside a container.

Behaviour (see docs/design/live-upgrade.md, "Persisted data"):
1. First start (no KubeDirector marker ``/mnt/etc/kubedirector.init``): copy every listed dir from
   the image into /mnt as KubeDirector does, write the data version, touch the marker.
2. Data version (``/mnt/.gitops-kd/version``) equals the target: seed dirs missing from the PVC
   (a dir new in this version), nothing else.
3. Otherwise, in a work dir ``/mnt/.gitops-kd/work/<target>``: set aside the previous old
   generation, then per dir — keep: leave it (seed it if missing); discard: install the image's copy;
   migrate: move the PVC copy to ``/mnt/.gitops-kd/old/<dir>`` and install the image's copy;
   restore: swap the kept old copy back in (the current copy becomes the old one; without a kept copy
   the current one is kept). Each step is staged then renamed, with done markers, so re-running after
   a crash at any point reaches the same end state. Finally the data version is written atomically
   and the work dir (with the previous old generation) removed.
A leftover work dir for another, unfinished target stops the script (exit 1) without touching data.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitops_kd.spec.upgrade import DISCARD, KEEP, MIGRATE, RESTORE

ACTIONS = (KEEP, DISCARD, MIGRATE, RESTORE)

ENV_VERSION = "GITOPS_KD_VERSION"
ENV_FROM_VERSION = "GITOPS_KD_FROM_VERSION"
ENV_DIRS = "GITOPS_KD_DIRS"
ENV_ROOT = "GITOPS_KD_ROOT"
ENV_MNT = "GITOPS_KD_MNT"

STATE_DIR = ".gitops-kd"  # on the PVC; mounted in the app container at STATE_MOUNT
STATE_MOUNT = "/var/lib/gitops-kd"
VERSION_FILE = f"{STATE_DIR}/version"
OLD_DIR = f"{STATE_DIR}/old"

INIT_SCRIPT = r"""set -f
R="${GITOPS_KD_ROOT:-/}"; M="${GITOPS_KD_MNT:-/mnt}"; S="$M/.gitops-kd"
T="${GITOPS_KD_VERSION:-}"; F="${GITOPS_KD_FROM_VERSION:-}"
log() { echo "gitops-kd-init: $*" >&2; }
fail() { log "$*"; exit 1; }
[ -n "$T" ] || fail "GITOPS_KD_VERSION is not set"
copy() {
  mkdir -p "$2/$1" || return 1
  [ -e "$R/$1" ] || return 0
  (cd "$R" && find "$1" \( ! -type l ! -writable -prune \) -o -print0 \
    | tar --null --no-recursion -cf - -T - | tar -xpf - -C "$2")
}
put_version() { printf '%s\n' "$T" > "$S/version.tmp" && mv -f "$S/version.tmp" "$S/version"; }
mkdir -p "$S" || fail "cannot create $S"
if [ ! -f "$M/etc/kubedirector.init" ]; then
  for e in $GITOPS_KD_DIRS; do
    d="${e#*=}"; copy "${d#/}" "$M" || fail "seeding $d from the image failed"
  done
  put_version || fail "cannot write $S/version"
  mkdir -p "$M/etc" && touch "$M/etc/kubedirector.init" || fail "cannot write the init marker"
  log "first start: seeded persisted dirs at version $T"
  exit 0
fi
cur=""; [ -f "$S/version" ] && cur="$(cat "$S/version")"
[ -n "$cur" ] || cur="${F:-$T}"
W="$S/work/$T"
set +f
for w in "$S"/work/*; do
  [ -e "$w" ] && [ "$w" != "$W" ] || continue
  [ "${w##*/}" = "$cur" ] && { rm -rf "$w"; continue; }
  fail "an unfinished data upgrade to ${w##*/} is in $w (data is at $cur, target $T): check and remove it"
done
set -f
mkdir -p "$W/done" "$W/staged" "$W/stage" "$W/trash" || fail "cannot create $W"
if [ "$cur" != "$T" ] && [ ! -d "$W/prev" ]; then
  if [ -d "$S/old" ]; then mv "$S/old" "$W/prev"; else mkdir "$W/prev"; fi || fail "cannot set aside $S/old"
fi
[ "$cur" = "$T" ] || mkdir -p "$S/old" || fail "cannot create $S/old"
for e in $GITOPS_KD_DIRS; do
  a="${e%%=*}"; d="${e#*=}"; r="${d#/}"
  [ "$cur" = "$T" ] && a=keep
  [ -e "$W/done/$r/.done" ] && continue
  if [ "$a" = keep ]; then
    if [ -e "$M/$r" ] && [ ! -e "$W/staged/$r/.staged" ]; then
      mkdir -p "$W/done/$r" && touch "$W/done/$r/.done" || fail "cannot mark $d done"
      continue
    fi
    a=discard
  fi
  if [ ! -e "$W/staged/$r/.staged" ]; then
    case "$a" in
      discard|migrate) rm -rf "$W/stage/$r" && copy "$r" "$W/stage" || fail "copying $d from the image failed" ;;
      restore)
        if [ -e "$W/prev/$r" ]; then
          rm -rf "$W/stage/$r"; p="$W/stage/$r"
          mkdir -p "${p%/*}" && mv "$W/prev/$r" "$p" || fail "cannot stage the kept copy of $d"
        elif [ ! -e "$W/stage/$r" ]; then log "restore $d: no kept copy, keeping the current one"; fi ;;
      *) fail "unknown action $a for $d" ;;
    esac
    mkdir -p "$W/staged/$r" && touch "$W/staged/$r/.staged" || fail "cannot mark $d staged"
  fi
  if [ -e "$W/stage/$r" ]; then
    if [ -e "$M/$r" ] || [ -L "$M/$r" ]; then
      if [ "$a" = discard ]; then o="$W/trash/$r"; else o="$S/old/$r"; fi
      rm -rf "$o"; mkdir -p "${o%/*}" && mv "$M/$r" "$o" || fail "cannot move $d aside"
    fi
    p="$M/$r"; mkdir -p "${p%/*}" && mv "$W/stage/$r" "$p" || fail "cannot install the new copy of $d"
  fi
  mkdir -p "$W/done/$r" && touch "$W/done/$r/.done" || fail "cannot mark $d done"
  [ "$cur" = "$T" ] || log "$a $d"
done
put_version || fail "cannot write $S/version"
rm -rf "$W"
rmdir "$S/work" "$S/old" 2>/dev/null
log "data at version $T (was $cur)"
"""


def dirs_env(entries: Iterable[tuple[str, str]]) -> str:
    """The GITOPS_KD_DIRS value for (dir, action) pairs: ``action=/dir`` words, sorted by dir.

    Raises ValueError naming the dir for an unknown action or a dir the script cannot carry
    (relative, whitespace, "..").
    """
    words: dict[str, str] = {}
    for directory, action in entries:
        if action not in ACTIONS:
            raise ValueError(f"persisted dir {directory}: unknown action {action!r} (want {', '.join(ACTIONS)})")
        if (
            not directory.startswith("/")
            or directory == "/"
            or any(c.isspace() for c in directory)
            or ".." in directory.split("/")
            or any(c in directory for c in "*?[")
        ):
            raise ValueError(
                f"persisted dir {directory!r}: must be an absolute path below / without whitespace, glob characters or '..'"
            )
        words[directory.rstrip("/")] = action
    return " ".join(f"{words[d]}={d}" for d in sorted(words))
