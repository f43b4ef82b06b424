"""docs/reference.md keeps up with the code: every field of the KDRollout and GitOpsKDSource CRDs and every CLI
command, option and argument has its entry (names are checked, nothing is generated for the doc to equal)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import click
import pytest

from gitops_kd.cli import main
from gitops_kd.crds import KDROLLOUT_CRD, SOURCE_CRD, load_crd
from tests.e2e.harness import ROOT

DOC = (ROOT / "docs/reference.md").read_text(encoding="utf-8")
SKIPPED = {"apiVersion", "kind", "metadata"}  # every Kubernetes object's


def section(heading: str) -> str:
    """The text under the Markdown heading ``heading`` (any level) up to the next heading of that level or above."""
    match = re.search(rf"^(#+) {re.escape(heading)}\s*$", DOC, re.MULTILINE)
    assert match, f"docs/reference.md has no heading {heading!r}"
    level = len(match.group(1))
    end = re.search(rf"^#{{1,{level}}} ", DOC[match.end() :], re.MULTILINE)
    return DOC[match.end() : match.end() + end.start() if end else len(DOC)]


def fields(schema: Mapping[str, Any], path: str) -> Iterator[str]:
    """Every field path of an openAPIV3 schema: `a.b`, `a[]` for array items, `a[key]` for map values."""
    for name, sub in (schema.get("properties") or {}).items():
        if not path and name in SKIPPED:
            continue
        here = f"{path}.{name}" if path else name
        yield here
        yield from _nested(sub, here)


def _nested(schema: Mapping[str, Any], path: str) -> Iterator[str]:
    yield from fields(schema, path)
    if isinstance(schema.get("items"), Mapping):
        yield from _nested(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _nested(schema["additionalProperties"], f"{path}[key]")


@pytest.mark.parametrize("crd", [KDROLLOUT_CRD, SOURCE_CRD])
def test_every_crd_field_is_in_the_reference(crd: str) -> None:
    """Invariant: each field of gitops-kd's CRDs (spec and status, nested ones included) is named, as
    `` `path` ``, in the reference section of its kind."""
    doc = load_crd(crd)
    kind = doc["spec"]["names"]["kind"]
    text = section(kind)
    schema = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    paths = list(fields(schema, ""))
    assert "status.conditions[].reason" in paths and "spec" in paths, paths  # the walk reaches nested fields
    missing = [p for p in paths if f"`{p}`" not in text]
    assert not missing, f"{kind} fields not in docs/reference.md: {missing}"


def commands(group: click.Group, prefix: str) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        yield f"{prefix} {name}", command
        if isinstance(command, click.Group):
            yield from commands(command, f"{prefix} {name}")


def test_every_command_and_option_is_in_the_reference() -> None:
    """Invariant: every `gitops-kd` command (sub-commands included) has a section in docs/reference.md naming each
    of its options (long and short spellings, both sides of a --x/--no-x flag) and arguments."""
    found = list(commands(main, "gitops-kd"))
    assert {"gitops-kd run", "gitops-kd sim serve", "gitops-kd desired show"} <= {n for n, _ in found}
    missing: list[str] = []
    for name, command in found:
        text = section(f"`{name}`")
        for param in command.params:
            if isinstance(param, click.Option):
                names = [n for n in (*param.opts, *param.secondary_opts) if n not in ("-h", "--help")]
            else:
                names = [(param.metavar or param.name or "").upper()]
            missing += [f"{name}: {n}" for n in names if not re.search(rf"`[^`]*(?<![\w-]){re.escape(n)}(?![\w-])", text)]
    assert not missing, f"not in docs/reference.md: {missing}"
