"""Build an UpgradeSpec from a stanza dict: schema check, then semantic checks against the app."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

from gitops_kd.spec.errors import SpecError, join_path
from gitops_kd.spec.freeze import FrozenMap, freeze
from gitops_kd.spec.persist import is_within
from gitops_kd.spec.reader import Reader
from gitops_kd.spec.upgrade import (
    DEFAULT_POD_READY_TIMEOUT,
    HALT,
    KEEP,
    MIGRATE,
    DirAction,
    DowngradeTo,
    UpgradeFrom,
    UpgradeSpec,
)
from gitops_kd.spec.upgrade_schema import schema_errors
from gitops_kd.spec.version import VersionRange
from gitops_kd.steps import migrate
from gitops_kd.steps.stanza import STANZA_STEPS, StanzaStep, field_of, fragment

T = TypeVar("T")


def parse_stanza(
    raw: object,
    reader: Reader,
    base: str,
    role_ids: Sequence[str] | None = None,
    persisted_dirs: Sequence[str] | None = None,
) -> UpgradeSpec | None:
    """Validate and build the stanza; problems go to ``reader``. Role/dir checks need the app's."""
    problems = schema_errors(raw, base)
    for field, reason in problems:
        reader.error(field, reason)
    if not isinstance(raw, Mapping):
        return None
    before = len(reader.errors)
    builder = _Builder(reader, base, role_ids, persisted_dirs)
    try:
        spec = builder.build(raw)
    except (KeyError, TypeError, AttributeError, IndexError):
        # malformed parts were reported by the schema; the checks above still ran on the rest
        return None
    return spec if len(reader.errors) == before and not problems else None


def parse_annotation(text: str, source: str) -> UpgradeSpec:
    """Parse the compact-JSON annotation form; SpecError naming ``source`` if invalid."""
    reader = Reader(source, None)
    try:
        raw = json.loads(text)
    except ValueError as exc:
        reader.error("", f"invalid JSON: {exc}")
        raise SpecError(reader.errors) from None
    spec = parse_stanza(raw, reader, "")
    if spec is None:
        raise SpecError(reader.errors)
    return spec


class _Builder:
    def __init__(self, reader: Reader, base: str, role_ids: Sequence[str] | None, persisted: Sequence[str] | None) -> None:
        self.r = reader
        self.base = base
        self.role_ids = role_ids
        self.persisted = persisted

    def build(self, raw: Mapping[str, Any]) -> UpgradeSpec:
        """Build every section; a malformed section raises only after the others were checked."""
        b = self.base
        failed: list[Exception] = []

        def section(make: Callable[[], T], fallback: T) -> T:
            try:
                return make()
            except (KeyError, TypeError, AttributeError, IndexError) as exc:
                failed.append(exc)
                return fallback

        no_roles: tuple[str, ...] = ()
        role_order = section(lambda: self._roles(raw.get("roleOrder"), join_path(b, "roleOrder")) or (), no_roles)
        upgrade_from = tuple(
            section(partial(self._upgrade_from, rule, join_path(join_path(b, "from"), i)), None)
            for i, rule in enumerate(raw.get("from") or ())
        )
        downgrade_to = section(lambda: self._downgrade(raw), None)
        steps = {field_of(kind): section(partial(self._step, kind, raw), None) for kind in STANZA_STEPS}
        if failed:
            raise failed[0]
        return UpgradeSpec(
            role_order=role_order,
            upgrade_from=tuple(r for r in upgrade_from if r is not None),
            downgrade_to=downgrade_to,
            **steps,
            pod_ready_timeout_seconds=raw.get("podReadyTimeoutSeconds", DEFAULT_POD_READY_TIMEOUT),
            failure_policy=raw.get("failurePolicy", HALT),
            raw=freeze(raw),
        )

    def _downgrade(self, raw: Mapping[str, Any]) -> tuple[DowngradeTo, ...] | None:
        if "downgrade" not in raw:
            return None
        path = join_path(join_path(self.base, "downgrade"), "to")
        return tuple(DowngradeTo(*self._rules(rule, join_path(path, i))) for i, rule in enumerate(raw["downgrade"]["to"]))

    def _roles(self, names: Sequence[str] | None, path: str) -> tuple[str, ...] | None:
        if names is None:
            return None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise TypeError("malformed role list")
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            item = join_path(path, i)
            if name in seen:
                self.r.error(item, f'role "{name}" listed twice (also at {join_path(path, seen[name])})')
                continue
            seen[name] = i
            if self.role_ids is not None and name not in self.role_ids:
                self.r.error(item, f'unknown role "{name}" (roles: {", ".join(self.role_ids)})')
        return tuple(names)

    def _upgrade_from(self, rule: Mapping[str, Any], path: str) -> UpgradeFrom:
        return UpgradeFrom(*self._rules(rule, path))

    def _rules(self, rule: Mapping[str, Any], path: str) -> tuple[VersionRange, FrozenMap[str, DirAction], str]:
        if not isinstance(rule.get("versions"), str):
            raise TypeError("malformed versions")
        try:
            versions = VersionRange.parse(rule["versions"])
        except ValueError as exc:
            self.r.error(join_path(path, "versions"), f"bad version range: {exc}")
            versions = VersionRange(rule["versions"], ())
        actions: dict[str, DirAction] = {}
        dirs_path = join_path(path, "persistDirs")
        for directory, value in (rule.get("persistDirs") or {}).items():
            self._check_dir(directory, join_path(dirs_path, directory))
            if isinstance(value, str):
                actions[directory] = DirAction(value)
            else:
                actions[directory] = DirAction(MIGRATE, migrate.parse(value[MIGRATE]))
        return versions, FrozenMap(actions), rule.get("default", KEEP)

    def _check_dir(self, directory: str, path: str) -> None:
        if not directory.startswith("/") or posixpath.normpath(directory) != directory or directory == "/":
            self.r.error(path, "must be an absolute, normalized directory path (no trailing /, no . or ..)")
            return
        if self.persisted is None:
            return
        if not any(is_within(directory, p) for p in self.persisted):
            listed = ", ".join(self.persisted)
            self.r.error(path, f"not a persisted dir of any role, nor inside one (persisted: {listed})")

    def _step(self, kind: StanzaStep, raw: Mapping[str, Any]) -> Any:
        path = self.base
        for part in kind.PATH:
            path = join_path(path, part)
        return kind.parse(
            fragment(raw, kind), partial(self.r.error, path), lambda names: self._roles(names, join_path(path, "roles"))
        )
