"""Field-level validation errors worded exactly like apimachinery's field.Error (Kubernetes 1.32)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"
TYPE_INVALID = "FieldValueTypeInvalid"
NOT_SUPPORTED = "FieldValueNotSupported"
FORBIDDEN = "FieldValueForbidden"
DUPLICATE = "FieldValueDuplicate"
TOO_LONG = "FieldValueTooLong"
TOO_MANY = "FieldValueTooMany"
NOT_FOUND = "FieldValueNotFound"

_TITLES = {
    REQUIRED: "Required value",
    INVALID: "Invalid value",
    TYPE_INVALID: "Invalid value",
    NOT_SUPPORTED: "Unsupported value",
    FORBIDDEN: "Forbidden",
    DUPLICATE: "Duplicate value",
    TOO_LONG: "Too long",
    TOO_MANY: "Too many",
    NOT_FOUND: "Not found",
}
_NO_VALUE = {REQUIRED, FORBIDDEN, TOO_LONG}


@dataclass(frozen=True)
class FieldError:
    """One field.Error: `path` like "spec.template.metadata.labels", `reason` a metav1 cause type."""

    path: str
    reason: str
    message: str  # the ErrorBody, e.g. `Invalid value: "x": must be ...`

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def go_quote(s: str) -> str:
    """Go's strconv.Quote (%q) of a string."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif not ch.isprintable() and code > 0x7F:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_number(n: int | float) -> str:
    """Go's %v of an int64 or float64."""
    if isinstance(n, bool):
        return "true" if n else "false"
    if isinstance(n, int):
        return str(n)
    if math.isinf(n):
        return "+Inf" if n > 0 else "-Inf"
    if math.isnan(n):
        return "NaN"
    if n.is_integer() and abs(n) < 1e21:
        return str(int(n))
    text = repr(n)
    if "e" in text:
        mantissa, exp = text.split("e")
        sign = "-" if exp.startswith("-") else "+"
        digits = exp.lstrip("+-").rjust(2, "0")
        return f"{mantissa}e{sign}{digits}"
    return text


def _go_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        if value and all(isinstance(v, str) for v in value.values()):
            return "map[string]string"
        return "map[string]interface {}"
    if isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            return "[]string"
        return "[]interface {}"
    return "interface {}"


def go_sharp_v(value: Any) -> str:
    """Go's %#v of a JSON-like value (maps sorted by key, as fmt does)."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return go_number(value)
    if isinstance(value, str):
        return go_quote(value)
    t = _go_type(value)
    if isinstance(value, dict):
        inner = t.endswith("interface {}")
        items = ", ".join(f"{go_quote(str(k))}:{_elem(value[k], inner)}" for k in sorted(value))
        return f"{t}{{{items}}}"
    if isinstance(value, list):
        inner = t.endswith("interface {}")
        return f"{t}{{" + ", ".join(_elem(v, inner) for v in value) + "}"
    return repr(value)


def _elem(value: Any, in_interface: bool) -> str:
    return go_sharp_v(value)


def render_value(value: Any) -> str:
    """How ErrorBody prints a bad value: %v for numbers/bools, %q for strings, %#v otherwise."""
    if value is None:
        return go_quote("null")
    if isinstance(value, (bool, int, float)):
        return go_number(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_sharp_v(value)


def _body(reason: str, value: Any, detail: str, show_value: bool = True) -> str:
    s = _TITLES[reason]
    if reason not in _NO_VALUE and show_value:
        s = f"{s}: {render_value(value)}"
    if detail:
        s = f"{s}: {detail}"
    return s


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, REQUIRED, _body(REQUIRED, "", detail))


def invalid(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError(path, INVALID, _body(INVALID, value, detail))


def type_invalid(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError(path, TYPE_INVALID, _body(TYPE_INVALID, value, detail))


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, FORBIDDEN, _body(FORBIDDEN, "", detail))


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(path, DUPLICATE, _body(DUPLICATE, value, ""))


def not_found(path: str, value: Any) -> FieldError:
    return FieldError(path, NOT_FOUND, _body(NOT_FOUND, value, ""))


def not_supported(path: str, value: Any, valid: list[str]) -> FieldError:
    detail = ("supported values: " + ", ".join(go_quote(str(v)) for v in valid)) if valid else ""
    return FieldError(path, NOT_SUPPORTED, _body(NOT_SUPPORTED, value, detail))


def too_long(path: str, max_length: int) -> FieldError:
    if max_length >= 0:
        detail = f"may not be more than {max_length} {'byte' if max_length == 1 else 'bytes'}"
    else:
        detail = "value is too long"
    return FieldError(path, TOO_LONG, _body(TOO_LONG, "", detail))


def too_many(path: str, actual: int, max_items: int) -> FieldError:
    detail = f"must have at most {max_items} {'item' if max_items == 1 else 'items'}"
    return FieldError(path, TOO_MANY, _body(TOO_MANY, actual, detail))


def child(path: str, name: str) -> str:
    """field.Path.Child."""
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    """field.Path.Index."""
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    """field.Path.Key."""
    return f"{path}[{k}]"
