"""App versions: coerce a KDApp spec.version to semver, and parse/match version ranges."""

from __future__ import annotations

import re
from dataclasses import dataclass

import semver

_IDENT = r"[0-9A-Za-z-]+"
_PRE = rf"{_IDENT}(?:\.{_IDENT})*"
_VERSION_RE = re.compile(rf"^[vV]?(?P<nums>[0-9]+(?:\.[0-9]+)*)(?:-(?P<pre>{_PRE}))?(?:\+(?P<build>{_PRE}))?$")
_HINT = (
    'expected MAJOR[.MINOR[.PATCH]] with an optional leading "v", "-prerelease" and "+build", '
    'e.g. "1.0", "2.4.5" or "v3.0.0-rc.1"'
)


def parse_app_version(text: str) -> semver.Version:
    """Coerce a KDApp version string to a semantic version.

    "1.0" -> 1.0.0, "2.4.5" -> 2.4.5, "v7.7.1" -> 7.7.1, "1" -> 1.0.0, "1.0-rc.1" -> 1.0.0-rc.1.
    Raises ValueError with the reason for anything else.
    """
    if not isinstance(text, str):
        raise ValueError(f"version must be a string, not {_type_name(text)}")
    if text.strip() == "":
        raise ValueError("version is empty")
    if text != text.strip():
        raise ValueError(f'version "{text}" has leading or trailing whitespace')
    m = _VERSION_RE.match(text)
    if m is None:
        raise ValueError(f'"{text}" is not a version: {_HINT}')
    nums = m.group("nums").split(".")
    if len(nums) > 3:
        raise ValueError(f'"{text}" has {len(nums)} numeric parts; at most 3 (MAJOR.MINOR.PATCH) are allowed')
    for part in nums:
        if len(part) > 1 and part.startswith("0"):
            raise ValueError(f'"{text}": numeric part "{part}" has a leading zero')
    pre = m.group("pre")
    if pre is not None:
        for ident in pre.split("."):
            if ident.isdigit() and len(ident) > 1 and ident.startswith("0"):
                raise ValueError(f'"{text}": prerelease part "{ident}" has a leading zero')
    major, minor, patch = (int(p) for p in (nums + ["0", "0"])[:3])
    return semver.Version(major, minor, patch, prerelease=pre, build=m.group("build"))


def _type_name(value: object) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "a map"}
    return names.get(type(value), "null" if value is None else type(value).__name__)


_OPS = (">=", "<=", ">", "<", "=")
_WILD = {"*", "x", "X"}
_PART = r"(?:\*|x|X|[0-9]+)"
_TOKEN_RE = re.compile(
    rf"^(?P<op>>=|<=|>|<|=|\^|~)?[vV]?(?P<major>{_PART})(?:\.(?P<minor>{_PART}))?"
    rf"(?:\.(?P<patch>{_PART}))?(?:-(?P<pre>{_PRE}))?(?:\+(?P<build>{_PRE}))?$"
)


@dataclass(frozen=True)
class Comparator:
    """One primitive comparison: op is one of >=, >, <, <=, =."""

    op: str
    version: semver.Version

    def matches(self, version: semver.Version) -> bool:
        c = version.compare(self.version)
        return {">=": c >= 0, ">": c > 0, "<": c < 0, "<=": c <= 0, "=": c == 0}[self.op]

    def __str__(self) -> str:
        return f"{self.op}{self.version}"


@dataclass(frozen=True)
class VersionRange:
    """A set of versions: alternatives joined by "||", each a conjunction of comparators."""

    text: str
    alternatives: tuple[tuple[Comparator, ...], ...]

    @classmethod
    def parse(cls, text: str) -> VersionRange:
        """Parse a range such as ">=1.0.0 <2.0.0", "1.x || ^3.1", "~1.2.0", "1.2.3".

        Raises ValueError naming the offending part.
        """
        if not isinstance(text, str):
            raise ValueError(f"version range must be a string, not {_type_name(text)}")
        if text.strip() == "":
            raise ValueError('version range is empty (use "*" for any version)')
        alternatives = tuple(_parse_alternative(alt.strip(), text) for alt in text.split("||"))
        return cls(text=text, alternatives=alternatives)

    def contains(self, version: semver.Version | str) -> bool:
        """True if the version (a semver.Version or an app version string) is in the range."""
        v = parse_app_version(version) if isinstance(version, str) else version
        return any(all(c.matches(v) for c in alt) for alt in self.alternatives)

    def __str__(self) -> str:
        return self.text


def _parse_alternative(alt: str, whole: str) -> tuple[Comparator, ...]:
    if alt == "":
        raise ValueError(f'"{whole}": empty alternative around "||"')
    hyphen = re.match(r"^(\S+)\s+-\s+(\S+)$", alt)
    if hyphen:
        return _expand(">=", hyphen.group(1), whole) + _expand("<=", hyphen.group(2), whole)
    alt = re.sub(r"(>=|<=|>|<|=|\^|~)\s+", r"\1", alt)
    result: list[Comparator] = []
    for token in alt.split():
        result.extend(_expand(None, token, whole))
    return tuple(result)


def _expand(forced_op: str | None, token: str, whole: str) -> tuple[Comparator, ...]:
    m = _TOKEN_RE.match(token)
    if m is None:
        raise ValueError(
            f'"{whole}": cannot parse "{token}": expected a comparator (>=, >, <, <=, =) '
            'followed by a version, "1.x", "^1.2.0", "~1.2.0", "*", or an exact version "1.2.3"'
        )
    op = forced_op or m.group("op") or "="
    parts = [m.group("major"), m.group("minor"), m.group("patch")]
    for p in parts:
        if p is not None and p not in _WILD and len(p) > 1 and p.startswith("0"):
            raise ValueError(f'"{whole}": "{token}" has a leading zero in "{p}"')
    # number of concrete numeric parts before the first missing/wildcard part
    given: list[int] = []
    for p in parts:
        if p is None or p in _WILD:
            break
        given.append(int(p))
    pre, build = m.group("pre"), m.group("build")
    if (pre or build) and len(given) < 3:
        raise ValueError(f'"{whole}": "{token}": a prerelease or build needs a full MAJOR.MINOR.PATCH')
    major, minor, patch = (given + [0, 0, 0])[:3]
    full = semver.Version(major, minor, patch, prerelease=pre, build=build)
    n = len(given)
    if n == 0:
        if op in ("<", ">"):
            raise ValueError(f'"{whole}": "{token}" matches no version')
        return ()
    return _comparators(op, full, n, token, whole)


def _bump(v: semver.Version, n: int) -> semver.Version:
    """The smallest prerelease of the next version at precision n (1=major, 2=minor, 3=patch)."""
    if n == 1:
        return semver.Version(v.major + 1, 0, 0, prerelease="0")
    if n == 2:
        return semver.Version(v.major, v.minor + 1, 0, prerelease="0")
    return semver.Version(v.major, v.minor, v.patch + 1, prerelease="0")


def _comparators(op: str, v: semver.Version, n: int, token: str, whole: str) -> tuple[Comparator, ...]:
    if op == "^":
        if v.major > 0 or n == 1:
            upper = _bump(v, 1)
        elif v.minor > 0 or n == 2:
            upper = _bump(v, 2)
        else:
            upper = _bump(v, 3)
        return (Comparator(">=", v), Comparator("<", upper))
    if op == "~":
        return (Comparator(">=", v), Comparator("<", _bump(v, 1 if n == 1 else 2)))
    if n == 3:
        return (Comparator(op, v),)
    # partial versions ("1", "1.2", "1.x")
    if op == "=":
        return (Comparator(">=", v), Comparator("<", _bump(v, n)))
    if op == ">=":
        return (Comparator(">=", v),)
    if op == ">":
        return (Comparator(">=", _bump(v, n).replace(prerelease=None)),)
    if op == "<":
        return (Comparator("<", v.replace(prerelease="0")),)
    if op == "<=":
        return (Comparator("<", _bump(v, n)),)
    raise ValueError(f'"{whole}": unknown operator in "{token}"')  # pragma: no cover
