"""Kubernetes resource quantities compared by value ("1" == "1000m", "1Gi" == "1024Mi") (pure)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_RE = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$")


def quantity_value(text: Any) -> Decimal | None:
    """The numeric value of a quantity string or number, or None if it is not one."""
    m = _RE.match(str(text).strip())
    if m is None:
        return None
    try:
        return Decimal(m.group(1)) * _SUFFIX[m.group(2)]
    except InvalidOperation:
        return None


def quantities_equal(a: Any, b: Any) -> bool:
    va, vb = quantity_value(a), quantity_value(b)
    return va == vb if va is not None and vb is not None else str(a) == str(b)


def resources_equal(live: Mapping[str, Any] | None, owned: Mapping[str, Any] | None) -> bool:
    """requests/limits (and any other map of quantities) equal by value; a missing map equals an empty one."""
    live, owned = live or {}, owned or {}
    for section in set(live) | set(owned):
        lv, ov = live.get(section) or {}, owned.get(section) or {}
        if not isinstance(lv, Mapping) or not isinstance(ov, Mapping):
            if lv != ov:
                return False
            continue
        if set(lv) != set(ov) or not all(quantities_equal(lv[k], ov[k]) for k in ov):
            return False
    return True
