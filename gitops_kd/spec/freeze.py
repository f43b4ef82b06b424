"""Deep-immutable copies of parsed documents: FrozenMap, freeze() and thaw()."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(Mapping[K, V]):
    """An immutable, hashable mapping that keeps insertion order."""

    __slots__ = ("_data", "_hash")

    def __init__(self, items: Mapping[K, V] | None = None) -> None:
        self._data: dict[K, V] = dict(items or {})
        self._hash: int | None = None

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._data) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


def freeze(value: Any) -> Any:
    """Return a deep-immutable copy: dicts become FrozenMap, lists become tuples."""
    if isinstance(value, Mapping):
        return FrozenMap({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Return a plain mutable deep copy of a frozen value: FrozenMap -> dict, tuple -> list."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value
