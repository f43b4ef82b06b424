"""JSON-schema pieces the step kinds' fragments share: a positive integer, an argv, a role list."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

POSITIVE: Mapping[str, Any] = {"type": "integer", "minimum": 1}
ARGV: Mapping[str, Any] = {"type": "array", "minItems": 1, "items": {"type": "string"}}
ROLES: Mapping[str, Any] = {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}
