"""Field-level comparison of a Git document with a live object, the way the applier judges it (pure).

``missing_or_changed(live, want)`` mirrors the executor's ``contains`` test: every field Git writes must be
in the live object with the same value; extra live fields (server defaults, status) are not compared.
``missing_or_changed_stored`` mirrors diff.engine.applied: Git's spec as written or as KubeDirector stores it
(kd/normalize.py), whichever the live object is closer to.
Lists of items with a key (name, id, port, ...) are compared item by item, so a path names the item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gitops_kd.drift import paths
from gitops_kd.drift.model import FieldChange
from gitops_kd.kd.normalize import stored_spec
from gitops_kd.spec.freeze import thaw


def missing_or_changed(live: Any, want: Any, prefix: tuple[str, ...] = ()) -> list[FieldChange]:
    """FieldChanges where ``live`` lacks or differs from ``want`` (paths relative to the compared objects)."""
    out: list[FieldChange] = []
    _walk(thaw(live), thaw(want), prefix, out)
    return out


def missing_or_changed_stored(live: Any, want: Mapping[str, Any], kind: str) -> list[FieldChange]:
    """missing_or_changed of ``want`` ({"spec": Git's spec, "metadata": ...}) against ``live``, with the spec as
    written and as KubeDirector stores it: none when either holds, else the shorter list of changes."""
    written = missing_or_changed(live, want)
    if not written or not isinstance(want.get("spec"), Mapping):
        return written
    stored = missing_or_changed(live, {**want, "spec": stored_spec(kind, want["spec"])})
    return stored if len(stored) < len(written) else written


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _walk(live: Any, want: Any, where: tuple[str, ...], out: list[FieldChange]) -> None:
    if isinstance(want, Mapping):
        if not isinstance(live, Mapping):
            out.append(FieldChange(paths.join(where), want, live))
            return
        for key, value in want.items():
            if key not in live:
                out.append(FieldChange(paths.join(where + (str(key),)), value, None))
            else:
                _walk(live[key], value, where + (str(key),), out)
        return
    if _is_list(want):
        if not _is_list(live):
            out.append(FieldChange(paths.join(where), want, live))
            return
        _walk_list(list(live), list(want), where, out)
        return
    if live != want:
        out.append(FieldChange(paths.join(where), want, live))


def _keys(items: list[Any]) -> list[str] | None:
    keys = [paths.item_key(i) for i in items]
    if any(k is None for k in keys) or len(set(keys)) != len(keys):
        return None
    return keys  # type: ignore[return-value]


def _walk_list(live: list[Any], want: list[Any], where: tuple[str, ...], out: list[FieldChange]) -> None:
    want_keys, live_keys = _keys(want), _keys(live)
    if want_keys is None or live_keys is None:
        if len(live) != len(want):
            out.append(FieldChange(paths.join(where), want, live))
            return
        for i, (a, b) in enumerate(zip(live, want)):
            _walk(a, b, where + (f"[{i}]",), out)
        return
    live_by = dict(zip(live_keys, live))
    for key, item in zip(want_keys, want):
        if key not in live_by:
            out.append(FieldChange(paths.join(where + (f"[{key}]",)), item, None))
        else:
            _walk(live_by[key], item, where + (f"[{key}]",), out)
    extra = [k for k in live_keys if k not in set(want_keys)]
    for key in extra:
        out.append(FieldChange(paths.join(where + (f"[{key}]",)), None, live_by[key]))
    if not extra and len(live_keys) == len(want_keys) and live_keys != want_keys:
        out.append(FieldChange(paths.join(where), want_keys, live_keys))
