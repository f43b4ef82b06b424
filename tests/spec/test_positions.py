"""Errors carry the line and column where their field is written (or the nearest enclosing field)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitops_kd.spec import FieldError, SpecError, load_manifests, locate
from gitops_kd.spec.positions import field_positions, prefixes

ROOT = Path(__file__).resolve().parents[2]
HELLO2 = (ROOT / "repo-template/examples/hello-2.0.0.yaml").read_text()


def errors_of(text: str) -> tuple[FieldError, ...]:
    with pytest.raises(SpecError) as info:
        load_manifests("apps/x.yaml", text.encode())
    return info.value.errors


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_prefixes_innermost_first() -> None:
    assert prefixes("spec.roles[1].id") == ["spec.roles[1].id", "spec.roles[1]", "spec.roles", "spec", ""]
    assert prefixes("metadata.annotations[gitops-kd.io/wave]") == [
        "metadata.annotations[gitops-kd.io/wave]",
        "metadata.annotations",
        "metadata",
        "",
    ]


def test_unknown_stanza_field_points_at_its_key() -> None:
    text = HELLO2.replace("periodSeconds", "periodSecond")
    (err,) = errors_of(text)
    assert err.field == "spec.upgrade.gate.periodSecond"
    assert (err.line, err.column) == (line_of(text, "periodSecond"), text.splitlines()[err.line - 1].index("p") + 1)


def test_missing_field_points_at_the_enclosing_one() -> None:
    text = HELLO2.replace('  version: "2.0.0"\n', "")
    errs = [e for e in errors_of(text) if e.field == "spec.version"]
    assert errs and errs[0].line == line_of(text, "spec:")


def test_yaml_syntax_error_has_the_parser_position() -> None:
    (err,) = errors_of("apiVersion: kubedirector.hpe.com/v1beta1\nkind: [unclosed\n")
    assert (err.line, err.column) == (3, 1)


def test_second_document_is_located_in_its_own_document() -> None:
    text = "---\n" + HELLO2 + "---\n" + HELLO2.replace("periodSeconds", "periodSecond")
    (err,) = errors_of(text)
    assert err.document == 2 and err.line == len(("---\n" + HELLO2 + "---\n").splitlines()) + line_of(HELLO2, "periodSeconds")


def test_locate_fills_only_missing_positions_and_survives_unparsable_files() -> None:
    known = FieldError("a.yaml", "spec", "r", None, 9, 9)
    found = locate(
        [known, FieldError("a.yaml", "spec.x", "r"), FieldError("b.yaml", "", "r")],
        {"a.yaml": b"spec:\n  y: 1\n", "b.yaml": b"[unclosed"}.get,
    )
    assert [(e.line, e.column) for e in found] == [(9, 9), (1, 1), (None, None)]
    assert field_positions(b"\xff") == []
