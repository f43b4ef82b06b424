"""Label and field selectors: parsing (apimachinery wording) and matching against objects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kdsim.errors import bad_request
from kdsim.namerules import is_qualified_name, is_valid_label_value
from kubeplumb.fielderrors import go_quote, invalid

IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "in", "notin", "=", "==", "!="
EXISTS, DOES_NOT_EXIST, GT, LT = "exists", "!", "gt", "lt"
_BINARY = [IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GT, LT]
_SPECIAL = ["!=", "==", "!", "(", ")", ",", "=", ">", "<"]


@dataclass(frozen=True)
class Requirement:
    """One label requirement: key, operator (in/notin/=/==/!=/exists/!/gt/lt) and values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator in (IN, EQUALS, DOUBLE_EQUALS):
            return present and labels[self.key] in self.values
        if self.operator in (NOT_IN, NOT_EQUALS):
            return not present or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return present
        if self.operator == DOES_NOT_EXIST:
            return not present
        if self.operator in (GT, LT) and present:
            try:
                have = int(labels[self.key])
            except ValueError:
                return False
            want = int(self.values[0])
            return have > want if self.operator == GT else have < want
        return False


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of requirements; no requirements matches everything."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False  # a nil metav1.LabelSelector converted with "matches nothing" semantics

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        got = labels or {}
        return all(r.matches(got) for r in self.requirements)

    def empty(self) -> bool:
        return not self.requirements and not self.nothing


def _requirement(key: str, op: str, values: list[str]) -> Requirement:
    """labels.NewRequirement with its validation; raises ValueError with the apimachinery message."""
    errs = [invalid("key", key, m) for m in is_qualified_name(key)]
    if op in (IN, NOT_IN) and not values:
        errs.append(invalid("values", [], "for 'in', 'notin' operators, values set can't be empty"))
    if op in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS) and len(values) != 1:
        errs.append(invalid("values", values, "exactly one value is required for equality operators"))
    if op in (EXISTS, DOES_NOT_EXIST) and values:
        errs.append(invalid("values", values, "values set must be empty for exists and does not exist"))
    if op in (GT, LT):
        if len(values) != 1:
            errs.append(invalid("values", values, "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, v in enumerate(values):
            try:
                int(v)
            except ValueError:
                errs.append(invalid(f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"))
    else:
        for i, v in enumerate(values):
            errs.extend(invalid(f"values[{i}][{key}]", v, m) for m in is_valid_label_value(v))
    if errs:
        text = str(errs[0]) if len(errs) == 1 else "[" + ", ".join(str(e) for e in errs) + "]"
        raise ValueError(text)
    return Requirement(key, op, tuple(sorted(set(values))) if op in (IN, NOT_IN) else tuple(values))


def _lex(text: str) -> list[tuple[str, str]]:
    """Tokens as (kind, literal): kind is 'id', 'in', 'notin', 'eos' or the symbol itself."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        sym = next((s for s in _SPECIAL if text.startswith(s, i)), None)
        if sym is not None:
            tokens.append((sym, sym))
            i += len(sym)
            continue
        j = i
        while j < len(text) and not text[j].isspace() and not any(text.startswith(s, j) for s in _SPECIAL):
            j += 1
        word = text[i:j]
        tokens.append((word if word in (IN, NOT_IN) else "id", word))
        i = j
    tokens.append(("eos", ""))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.pos = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos]

    def take(self) -> tuple[str, str]:
        tok = self.tokens[self.pos]
        if tok[0] != "eos":
            self.pos += 1
        return tok

    def parse(self) -> list[Requirement]:
        out: list[Requirement] = []
        while True:
            kind, lit = self.peek()
            if kind in ("id", "!"):
                try:
                    out.append(self.requirement())
                except ValueError as err:
                    raise ValueError(f"unable to parse requirement: {err}") from None
                kind, lit = self.peek()
                if kind == "eos":
                    return out
                if kind == ",":
                    self.take()
                    nxt, nlit = self.peek()
                    if nxt in ("eos", ","):
                        raise ValueError(f"found '{nlit}', expected: identifier after ','")
                    continue
                raise ValueError(f"found '{lit}', expected: ',' or 'end of string'")
            if kind == "eos":
                return out
            raise ValueError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        negated = False
        if self.peek()[0] == "!":
            self.take()
            negated = True
        kind, key = self.take()
        if kind != "id":
            raise ValueError(f"found '{key}', expected: identifier")
        if negated:
            return _requirement(key, DOES_NOT_EXIST, [])
        if self.peek()[0] in ("eos", ","):
            return _requirement(key, EXISTS, [])
        op_kind, op_lit = self.take()
        op = {"in": IN, "notin": NOT_IN, "=": EQUALS, "==": DOUBLE_EQUALS, "!=": NOT_EQUALS, ">": GT, "<": LT}.get(op_kind)
        if op is None:
            raise ValueError(f"found '{op_lit}', expected: {', '.join(_BINARY)}")
        return _requirement(key, op, self.values() if op in (IN, NOT_IN) else self.exact_value())

    def exact_value(self) -> list[str]:
        kind, lit = self.peek()
        if kind in ("eos", ","):
            return [""]
        self.take()
        if kind in ("id", "in", "notin"):
            return [lit]
        raise ValueError(f"found '{lit}', expected: identifier")

    def values(self) -> list[str]:
        kind, lit = self.take()
        if kind != "(":
            raise ValueError(f"found '{lit}' expected: '('")
        kind, lit = self.peek()
        if kind == ")":
            self.take()
            return [""]
        if kind not in ("id", "in", "notin", ","):
            raise ValueError(f"found '{lit}', expected: ',', ')' or identifier")
        out: list[str] = []
        expect_value = True
        while True:
            kind, lit = self.take()
            if kind in ("id", "in", "notin") and expect_value:
                out.append(lit)
                expect_value = False
            elif kind == ",":
                if expect_value:
                    out.append("")
                expect_value = True
            elif kind == ")":
                if expect_value:
                    out.append("")
                return out
            else:
                raise ValueError(f"found '{lit}', expected: ',' or ')'")


def parse_label_selector(text: str) -> LabelSelector:
    """labels.Parse; a bad selector raises ApiError 400 worded like the apiserver."""
    try:
        reqs = _Parser(text).parse()
    except ValueError as err:
        raise bad_request(str(err)) from None
    return LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))


def label_selector_from_dict(d: dict[str, Any] | None) -> LabelSelector:
    """metav1.LabelSelectorAsSelector: None matches nothing, {} matches everything."""
    if d is None:
        return LabelSelector(nothing=True)
    reqs: list[Requirement] = []
    ops = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}
    try:
        for key, value in sorted((d.get("matchLabels") or {}).items()):
            reqs.append(_requirement(key, EQUALS, [str(value)]))
        for expr in d.get("matchExpressions") or []:
            op = ops.get(expr.get("operator", ""))
            if op is None:
                raise ValueError(f"{go_quote(str(expr.get('operator', '')))} is not a valid label selector operator")
            reqs.append(_requirement(str(expr.get("key", "")), op, [str(v) for v in expr.get("values") or []]))
    except ValueError as err:
        raise bad_request(str(err)) from None
    return LabelSelector(tuple(sorted(reqs, key=lambda r: r.key)))


def selector_to_string(selector: LabelSelector) -> str:
    """labels.Selector.String(), e.g. `app=web,tier in (a,b)` (used for status.selector)."""
    parts = []
    for r in selector.requirements:
        if r.operator == EXISTS:
            parts.append(r.key)
        elif r.operator == DOES_NOT_EXIST:
            parts.append("!" + r.key)
        elif r.operator in (IN, NOT_IN):
            parts.append(f"{r.key} {r.operator} ({','.join(r.values)})")
        else:
            op = {GT: ">", LT: "<"}.get(r.operator, r.operator)
            parts.append(f"{r.key}{op}{r.values[0]}")
    return ",".join(parts)


_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
_FIELDS: dict[str, tuple[str, ...]] = {
    "Pod": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    ),
    "Event": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "Secret": ("type",),
    "Namespace": ("status.phase",),
    "Node": ("spec.unschedulable",),
    "ReplicaSet": ("status.replicas",),
    "ReplicationController": ("status.replicas",),
    "Job": ("status.successful",),
    "Service": ("spec.clusterIP", "spec.type"),
}


def supported_fields(kind: str) -> tuple[str, ...]:
    """Field labels the real apiserver accepts in a fieldSelector for `kind`."""
    return _COMMON_FIELDS + _FIELDS.get(kind, ())


def field_value(obj: Mapping[str, Any], field: str) -> str:
    """The string value a field selector compares for `field` (absent fields compare as "")."""
    if field == "source":
        return str((obj.get("source") or {}).get("component", ""))
    if field == "reportingComponent":
        return str(obj.get("reportingComponent", ""))
    if field == "status.podIPs":
        return ",".join(str(i.get("ip", "")) for i in (obj.get("status") or {}).get("podIPs") or [])
    node: Any = obj
    for part in field.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    if field in ("spec.hostNetwork", "spec.unschedulable"):
        return "true" if node else "false"
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


@dataclass(frozen=True)
class FieldTerm:
    """One `field=value` or `field!=value` term."""

    field: str
    value: str
    negated: bool = False


@dataclass(frozen=True)
class FieldSelector:
    """A conjunction of field terms; no terms matches everything."""

    terms: tuple[FieldTerm, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for term in self.terms:
            equal = field_value(obj, term.field) == term.value
            if equal == term.negated:
                return False
        return True

    def empty(self) -> bool:
        return not self.terms


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], "", 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            cur += text[i : i + 2]
            i += 2
            continue
        if text[i] == sep:
            parts.append(cur)
            cur = ""
        else:
            cur += text[i]
        i += 1
    parts.append(cur)
    return parts


def _unescape(value: str) -> str:
    out, i = "", 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            if i + 1 >= len(value) or value[i + 1] not in "\\,=":
                raise ValueError(f"invalid field selector: invalid escape sequence: {value[i : i + 2]}")
            out += value[i + 1]
            i += 2
            continue
        if ch in ",=":
            raise ValueError(f"invalid field selector: unescaped character in value: {value}")
        out += ch
        i += 1
    return out


def _split_term(term: str) -> tuple[str, str, str] | None:
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
        i += 1
    return None


def parse_field_selector(text: str, kind: str) -> FieldSelector:
    """fields.ParseSelector plus the per-kind field label check; errors are ApiError 400."""
    terms: list[FieldTerm] = []
    if not text.strip():
        return FieldSelector()
    allowed = supported_fields(kind)
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, raw = split
        try:
            value = _unescape(raw)
        except ValueError as err:
            raise bad_request(str(err)) from None
        if field not in allowed:
            raise bad_request(f"field label not supported: {field}")
        terms.append(FieldTerm(field, value, op == "!="))
    return FieldSelector(tuple(terms))
