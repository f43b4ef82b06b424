"""Typed field reader for parsed documents: returns values and records a FieldError for each bad one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.spec.errors import FieldError, join_path


def type_name(value: object) -> str:
    """How a YAML/JSON value's type is named in error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a map"
    return type(value).__name__


class Reader:
    """Reads fields of one document; every problem becomes a FieldError in ``errors``."""

    def __init__(self, file: str, document: int | None) -> None:
        self.file = file
        self.document = document
        self.errors: list[FieldError] = []

    def error(self, field: str, reason: str) -> None:
        self.errors.append(FieldError(self.file, field, reason, self.document))

    def get(self, parent: Mapping[str, Any] | None, key: str, path: str, required: bool) -> Any:
        if parent is None:
            return None
        if key not in parent or parent[key] is None:
            if required:
                self.error(join_path(path, key), "required field is missing")
            return None
        return parent[key]

    def get_map(self, parent: Mapping[str, Any] | None, key: str, path: str, required: bool = False) -> Mapping[str, Any] | None:
        value = self.get(parent, key, path, required)
        if value is None or isinstance(value, Mapping):
            return value
        self.error(join_path(path, key), f"must be a map, not {type_name(value)}")
        return None

    def get_list(self, parent: Mapping[str, Any] | None, key: str, path: str, required: bool = False) -> list[Any] | None:
        value = self.get(parent, key, path, required)
        if value is None or isinstance(value, list):
            return value
        self.error(join_path(path, key), f"must be a list, not {type_name(value)}")
        return None

    def get_str(self, parent: Mapping[str, Any] | None, key: str, path: str, required: bool = False) -> str | None:
        value = self.get(parent, key, path, required)
        if value is None or isinstance(value, str):
            if required and value == "":
                self.error(join_path(path, key), "must not be empty")
            return value
        hint = f' (quote it: "{value}")' if isinstance(value, (int, float, bool)) else ""
        self.error(join_path(path, key), f"must be a string, not {type_name(value)}{hint}")
        return None

    def get_int(self, parent: Mapping[str, Any] | None, key: str, path: str, required: bool = False) -> int | None:
        value = self.get(parent, key, path, required)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        self.error(join_path(path, key), f"must be an integer, not {type_name(value)}")
        return None

    def get_bool(self, parent: Mapping[str, Any] | None, key: str, path: str) -> bool | None:
        value = self.get(parent, key, path, False)
        if value is None or isinstance(value, bool):
            return value
        self.error(join_path(path, key), f"must be true or false, not {type_name(value)}")
        return None

    def get_str_list(
        self, parent: Mapping[str, Any] | None, key: str, path: str, required: bool = False
    ) -> tuple[str, ...] | None:
        items = self.get_list(parent, key, path, required)
        if items is None:
            return None
        result: list[str] = []
        for i, item in enumerate(items):
            if isinstance(item, str):
                result.append(item)
            else:
                self.error(join_path(join_path(path, key), i), f"must be a string, not {type_name(item)}")
        return tuple(result)

    def get_maps(
        self, parent: Mapping[str, Any] | None, key: str, path: str, required: bool = False
    ) -> list[tuple[str, Mapping[str, Any]]]:
        """A list of maps, as (item path, item) pairs; non-map items are reported and skipped."""
        items = self.get_list(parent, key, path, required)
        result: list[tuple[str, Mapping[str, Any]]] = []
        for i, item in enumerate(items or ()):
            item_path = join_path(join_path(path, key), i)
            if isinstance(item, Mapping):
                result.append((item_path, item))
            else:
                self.error(item_path, f"must be a map, not {type_name(item)}")
        return result

    def get_string_map(self, parent: Mapping[str, Any] | None, key: str, path: str) -> dict[str, str]:
        """A map of string to string (labels, annotations)."""
        value = self.get_map(parent, key, path)
        result: dict[str, str] = {}
        for k, v in (value or {}).items():
            if not isinstance(v, str):
                hint = f' (quote it: "{v}")' if isinstance(v, (int, float, bool)) else ""
                self.error(join_path(join_path(path, key), str(k)), f"must be a string, not {type_name(v)}{hint}")
            else:
                result[str(k)] = v
        return result
