"""Ignore rules for drift: per kind, field paths (with ``*`` globs) or ``regex:`` patterns that are never drift (pure).

File format (YAML or the same dict)::

    defaults: true            # keep DEFAULT_IGNORE (default true)
    ignore:
      "*":                    # every kind
        - metadata.labels[team]
      StatefulSet:
        - spec.template.spec.containers[app].resources     # let humans tune resources live
        - regex:^spec\\.template\\.metadata\\.annotations\\[example\\.com/.*\\]$

A path pattern is split like a drift path (``a.b[key]``); each segment is an fnmatch glob, and a pattern
ignores the field it names and everything below it. A ``regex:`` pattern is searched in the drift path
string (the drift notation, like deepdiff's exclude_regex_paths but on our paths).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gitops_kd.drift import paths
from gitops_kd.drift.model import KINDS
from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.kd.layout import SERVICE_KIND as SERVICE
from gitops_kd.kd.layout import STATEFULSET_KIND as STATEFULSET

ANY_KIND = "*"
REGEX_PREFIX = "regex:"

# Fields the API server, controllers or kubectl write; they are never gitops-kd's, so never drift.
DEFAULT_IGNORE: Mapping[str, tuple[str, ...]] = {
    ANY_KIND: (
        "status",
        "metadata.managedFields",
        "metadata.resourceVersion",
        "metadata.generation",
        "metadata.uid",
        "metadata.creationTimestamp",
        "metadata.selfLink",
        "metadata.ownerReferences",
        "metadata.finalizers",
        "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]",
        "metadata.annotations[deployment.kubernetes.io/*]",
    ),
    # KubeDirector owns the member count (spec.replicas), kubectl rollout restart stamps the template.
    STATEFULSET: (
        "spec.replicas",
        "spec.template.metadata.annotations[kubectl.kubernetes.io/*]",
        "spec.template.metadata.labels[controller-revision-hash]",
        "spec.revisionHistoryLimit",
    ),
    # The apiserver defaults these (clusterIP allocation, targetPort = port, protocol TCP).
    SERVICE: (
        "spec.clusterIP",
        "spec.clusterIPs",
        "spec.ports[*].targetPort",
        "spec.ports[*].protocol",
        "spec.ports[*].nodePort",
        "spec.ipFamilies",
        "spec.ipFamilyPolicy",
        "spec.internalTrafficPolicy",
    ),
    KDAPP_KIND: ("metadata.annotations[kubedirector.hpe.com/*]",),
    KDCLUSTER_KIND: ("metadata.annotations[kubedirector.hpe.com/*]", "spec.roles[*].podLabels[kubedirector.hpe.com/*]"),
}


class RulesError(ValueError):
    """A bad ignore-rules document; the message names the source, field and reason."""


@dataclass(frozen=True)
class _Pattern:
    text: str
    segments: tuple[str, ...] = ()
    regex: re.Pattern[str] | None = None

    def matches(self, path: str, parts: tuple[str, ...]) -> bool:
        if self.regex is not None:
            return self.regex.search(path) is not None
        if len(parts) < len(self.segments):
            return False
        return all(fnmatch.fnmatchcase(p, s) for p, s in zip(parts, self.segments))


@dataclass(frozen=True)
class IgnoreRules:
    """Per-kind ignore patterns (``*`` applies to every kind). ``ignored(kind, path)`` is the test."""

    patterns: Mapping[str, tuple[_Pattern, ...]] = field(default_factory=dict)

    @classmethod
    def defaults(cls) -> IgnoreRules:
        return cls.from_dict({})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, *, source: str = "drift rules") -> IgnoreRules:
        """Rules from a parsed document; DEFAULT_IGNORE is included unless ``defaults: false``."""
        data = data or {}
        if not isinstance(data, Mapping):
            raise RulesError(f"{source}: must be a mapping with 'ignore' (and optional 'defaults'), got {type(data).__name__}")
        unknown = set(data) - {"ignore", "defaults"}
        if unknown:
            raise RulesError(f"{source}: unknown field(s) {', '.join(sorted(map(str, unknown)))} (allowed: ignore, defaults)")
        use_defaults = data.get("defaults", True)
        if not isinstance(use_defaults, bool):
            raise RulesError(f"{source}: defaults: must be true or false, got {use_defaults!r}")
        ignore = data.get("ignore") or {}
        if not isinstance(ignore, Mapping):
            raise RulesError(f"{source}: ignore: must map a kind to a list of paths, got {type(ignore).__name__}")
        merged: dict[str, list[_Pattern]] = {}
        if use_defaults:
            for kind, texts in DEFAULT_IGNORE.items():
                merged.setdefault(kind, []).extend(_compile(t, f"{source}: (defaults)") for t in texts)
        for kind, texts in ignore.items():
            where = f"{source}: ignore.{kind}"
            if kind != ANY_KIND and kind not in KINDS:
                raise RulesError(f"{where}: unknown kind (use {ANY_KIND!r} or one of {', '.join(KINDS)})")
            if isinstance(texts, str) or not isinstance(texts, Iterable):
                raise RulesError(f"{where}: must be a list of field paths")
            merged.setdefault(kind, []).extend(_compile(t, f"{where}[{i}]") for i, t in enumerate(texts))
        return cls({k: tuple(v) for k, v in merged.items()})

    @classmethod
    def from_yaml(cls, text: str, *, source: str = "drift rules") -> IgnoreRules:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise RulesError(f"{source}: not valid YAML: {exc}") from exc
        return cls.from_dict(data, source=source)

    @classmethod
    def from_file(cls, path: str | Path) -> IgnoreRules:
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as exc:
            raise RulesError(f"{p}: cannot read drift rules: {exc.strerror or exc}") from exc
        return cls.from_yaml(text, source=str(p))

    def ignored(self, kind: str, path: str) -> bool:
        """True when ``path`` of an object of ``kind`` (or a parent of it) is ignored."""
        parts = paths.split(path)
        for pattern in self.patterns.get(ANY_KIND, ()) + self.patterns.get(kind, ()):
            if pattern.matches(path, parts):
                return True
        return False

    def describe(self) -> dict[str, list[str]]:
        """The patterns per kind as written (for logs and `--help`-style output)."""
        return {k: [p.text for p in v] for k, v in sorted(self.patterns.items())}


def _compile(text: Any, where: str) -> _Pattern:
    if not isinstance(text, str) or not text.strip():
        raise RulesError(f"{where}: must be a non-empty string (a field path or 'regex:<pattern>'), got {text!r}")
    text = text.strip()
    if text.startswith(REGEX_PREFIX):
        try:
            return _Pattern(text, regex=re.compile(text[len(REGEX_PREFIX) :]))
        except re.error as exc:
            raise RulesError(f"{where}: invalid regular expression {text[len(REGEX_PREFIX) :]!r}: {exc}") from exc
    try:
        return _Pattern(text, segments=paths.split(text))
    except ValueError as exc:
        raise RulesError(f"{where}: {exc}") from exc
