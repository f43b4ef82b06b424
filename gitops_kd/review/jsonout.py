"""A review as JSON (pure): the dataclasses as objects, plus the derived counts."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from gitops_kd.review.model import Review
from gitops_kd.review.words import UPPER_BOUND


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def as_json(r: Review) -> str:
    """The review with ``refused``, ``replaced`` per cluster and in all, and what the estimate means."""
    data = _plain(r)
    data["refused"] = r.refused
    data["replaced"] = r.replaced
    for obj, c in zip(data["clusters"], r.clusters):
        obj["key"] = "/".join(c.key)
        obj["replaced"] = c.replaced
    for obj, a in zip(data["apps"], r.apps):
        obj["key"] = "/".join(a.key)
    data["estimate"] = UPPER_BOUND
    return json.dumps(data, indent=2) + "\n"
