"""Deep-immutable copies of parsed documents: FrozenMap, freeze() and thaw()."""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(Mapping[K, V]):
    """An immutable, hashable mapping that keeps insertion order."""

    __slots__ = ("_data", "_deep", "_hash")

    def __init__(self, items: Mapping[K, V] | None = None) -> None:
        self._data: dict[K, V] = dict(items or {})
        self._hash: int | None = None
        self._deep = False  # True only when built by freeze(): every value inside is immutable too

    @classmethod
    def _frozen(cls, data: dict[K, V]) -> FrozenMap[K, V]:
        """Wrap a dict of frozen values, which no one else holds, without copying it (freeze's constructor)."""
        made = cls.__new__(cls)
        made._data, made._hash, made._deep = data, None, True
        return made

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    # The Mapping mixins go through __getitem__/__iter__ in Python; these read the dict directly (hot paths).
    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: K, default: Any = None) -> Any:
        return self._data.get(key, default)

    def keys(self) -> KeysView[K]:
        return self._data.keys()

    def values(self) -> ValuesView[V]:
        return self._data.values()

    def items(self) -> ItemsView[K, V]:
        return self._data.items()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self is other or self._data == other._data
        if isinstance(other, Mapping):
            return dict(self._data) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


Share = Callable[[Any, Any], Any]
"""share(key, value): the instance to keep for a frozen ``value`` (a string, FrozenMap or tuple) found under the
mapping key ``key`` (None for a mapping key itself): equal values of many objects can then be held once."""


def freeze(value: Any, share: Share | None = None, key: Any = None) -> Any:
    """Return a deep-immutable copy: dicts become FrozenMap, lists become tuples. A value freeze() already
    made is returned as is (it is immutable all the way down), so freezing it again copies nothing.
    ``share`` (optional) picks the instance kept for each string, mapping and sequence, innermost first
    (see Share and gitops_kd.observe.compact); ``key`` is the mapping key ``value`` was found under."""
    if isinstance(value, FrozenMap) and value._deep:
        return value
    if isinstance(value, Mapping):
        if share is None:
            return FrozenMap._frozen({k: freeze(v) for k, v in value.items()})
        return share(
            key, FrozenMap._frozen({share(None, k) if type(k) is str else k: freeze(v, share, k) for k, v in value.items()})
        )
    if isinstance(value, (list, tuple)):
        frozen = tuple(freeze(v, share, key) for v in value)
        return frozen if share is None else share(key, frozen)
    if share is not None and type(value) is str:
        return share(key, value)
    return value


def thaw(value: Any) -> Any:
    """Return a plain mutable deep copy of a frozen value: FrozenMap -> dict, tuple -> list."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value
