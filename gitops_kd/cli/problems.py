"""Errors of a refused commit or tree as text (file:line:column: field: reason), JSON or GitHub annotations."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from gitops_kd.cli.terminal import printable
from gitops_kd.spec import FieldError

FORMATS = ("text", "json", "github")


def _where(err: FieldError) -> tuple[int, int]:
    """Line and column; a whole-file error (a symlink, a size limit) points at the file's start."""
    return err.line or 1, err.column or 1


def _message(err: FieldError) -> str:
    doc = f"(document {err.document}) " if err.document is not None else ""
    return f"{doc}{err.field}: {err.reason}" if err.field else f"{doc}{err.reason}"


def text_line(err: FieldError) -> str:
    """``file:line:column: field: reason``, the form editors and problem matchers read."""
    line, column = _where(err)
    return f"{printable(err.file, one_line=True)}:{line}:{column}: {printable(_message(err))}"


def _escape_data(text: str) -> str:
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(err: FieldError, title: str = "gitops-kd validate", level: str = "error") -> str:
    """A GitHub Actions workflow command: ``::error file=...,line=...,col=...,title=...::message`` (``level``:
    error or warning)."""
    props = [f"file={_escape_property(err.file)}"]
    if err.line is not None:
        props.append(f"line={err.line}")
        if err.column is not None:
            props.append(f"col={err.column}")
    props.append(f"title={_escape_property(title)}")
    return f"::{level} {','.join(props)}::{_escape_data(_message(err))}"


def as_dict(err: FieldError) -> dict[str, Any]:
    """One error as a JSON object (line/column null when unknown)."""
    return {
        "file": err.file,
        "line": err.line,
        "column": err.column,
        "document": err.document,
        "field": err.field,
        "reason": err.reason,
    }


def render(errors: Sequence[FieldError], fmt: str, summary: dict[str, Any], warnings: Sequence[FieldError] = ()) -> Iterable[str]:
    """The lines to print for ``errors`` and ``warnings`` (said, never refused) in format ``fmt``; ``summary`` adds
    the JSON fields (source, counts)."""
    if fmt == "json":
        shown = {**summary, "valid": not errors, "errors": [as_dict(e) for e in errors]}
        yield json.dumps({**shown, "warnings": [as_dict(w) for w in warnings]}, indent=2)
        return
    for err in errors:
        yield github_line(err) if fmt == "github" else text_line(err)
    for warning in warnings:
        yield github_line(warning, level="warning") if fmt == "github" else f"warning: {text_line(warning)}"
    files = len({e.file for e in errors})
    if errors:
        yield f"{printable(summary['source'])}: refused: {len(errors)} error(s) in {files} file(s)"
    else:
        yield f"{printable(summary['source'])}: valid: {summary['apps']} app(s), {summary['clusters']} cluster(s)"
