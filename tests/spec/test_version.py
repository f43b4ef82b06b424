"""App version coercion and version ranges."""

from __future__ import annotations

import pytest
import semver

from gitops_kd.spec import VersionRange, parse_app_version


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.0", "1.0.0"),
        ("2.4.5", "2.4.5"),
        ("7.7.1", "7.7.1"),
        ("3.2", "3.2.0"),
        ("1", "1.0.0"),
        ("v1.2.3", "1.2.3"),
        ("V2.0", "2.0.0"),
        ("1.0.0-rc.1", "1.0.0-rc.1"),
        ("1.0-rc.1", "1.0.0-rc.1"),
        ("2.0.0+build.7", "2.0.0+build.7"),
        ("0.0.0", "0.0.0"),
    ],
)
def test_coercion(text: str, expected: str) -> None:
    assert parse_app_version(text) == semver.Version.parse(expected)
    assert str(parse_app_version(text)) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1.2.3.4", "4 numeric parts"),
        ("01.2", "leading zero"),
        ("1.02", "leading zero"),
        ("", "empty"),
        ("latest", "is not a version"),
        ("1.x", "is not a version"),
        ("1.0 ", "whitespace"),
        ("1.0.0-rc.01", "leading zero"),
        ("1..0", "is not a version"),
    ],
)
def test_refused_versions(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_app_version(text)


def test_non_string_version_refused() -> None:
    with pytest.raises(ValueError, match="must be a string, not a number"):
        parse_app_version(1.0)  # type: ignore[arg-type]


VERSIONS = ["0.9.0", "1.0.0", "1.2.0", "1.2.9", "1.3.0", "2.0.0-rc.1", "2.0.0", "2.3.5", "3.0.0"]


@pytest.mark.parametrize(
    ("text", "inside"),
    [
        (">=1.0.0 <2.0.0", ["1.0.0", "1.2.0", "1.2.9", "1.3.0", "2.0.0-rc.1"]),
        ("1.x", ["1.0.0", "1.2.0", "1.2.9", "1.3.0"]),
        ("1", ["1.0.0", "1.2.0", "1.2.9", "1.3.0"]),
        ("^1.2.0", ["1.2.0", "1.2.9", "1.3.0"]),
        ("~1.2.0", ["1.2.0", "1.2.9"]),
        ("1.2.x", ["1.2.0", "1.2.9"]),
        ("1.2.9", ["1.2.9"]),
        ("=2.0.0", ["2.0.0"]),
        (">2.0.0", ["2.3.5", "3.0.0"]),
        (">1.2", ["1.3.0", "2.0.0-rc.1", "2.0.0", "2.3.5", "3.0.0"]),
        ("<=1.2", ["0.9.0", "1.0.0", "1.2.0", "1.2.9"]),
        ("<1 || >=3", ["0.9.0", "3.0.0"]),
        (">= 1.0 < 1.3", ["1.0.0", "1.2.0", "1.2.9"]),
        ("1.0.0 - 1.2", ["1.0.0", "1.2.0", "1.2.9"]),
        ("^0.9.0", ["0.9.0"]),
        ("*", VERSIONS),
        ("v1.2.0 || 2.3.5", ["1.2.0", "2.3.5"]),
    ],
)
def test_range_matching(text: str, inside: list[str]) -> None:
    r = VersionRange.parse(text)
    assert [v for v in VERSIONS if r.contains(v)] == inside
    assert [v for v in VERSIONS if r.contains(semver.Version.parse(v))] == inside
    assert str(r) == text


def test_app_versions_match_ranges() -> None:
    assert VersionRange.parse(">=1.0.0 <2.0.0").contains("1.0")  # app version coercion applies
    assert not VersionRange.parse("^3").contains("v2.9")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        (">=1.0.0 ||", 'empty alternative around "||"'),
        ("=>1.0", 'cannot parse "=>1.0"'),
        (">=1.0.0 <<2", 'cannot parse "<<2"'),
        ("latest", 'cannot parse "latest"'),
        (">=01.0", "leading zero"),
        ("1.x-rc.1", "needs a full MAJOR.MINOR.PATCH"),
        ("<*", "matches no version"),
    ],
)
def test_bad_ranges(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason.replace("|", r"\|")):
        VersionRange.parse(text)
