"""IdentityMemo: results of pure functions of immutable inputs, keyed by the inputs' identity (pure, in-memory).

Desired and observed objects are frozen, so the same object always means the same content: a result
computed from a tuple of objects can be reused as long as every one of them is the very same object
(``is``), with equal ``extra`` (hashable) arguments. A changed input is a new object and misses.
Each entry holds its inputs, so an ``id()`` is never reused while the entry exists.

Memory is bounded by rounds: ``new_round()`` (called once per diff) drops every entry not used
during the previous round, so the memo holds at most the inputs of the last two rounds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")

_Entry = tuple[tuple[object, ...], T]


class IdentityMemo(Generic[T]):
    """A two-generation memo keyed by ``(id(obj) for obj in objects) + extra``; see the module docstring."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._current: dict[Hashable, _Entry[T]] = {}
        self._previous: dict[Hashable, _Entry[T]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, objects: tuple[object, ...], extra: Hashable, compute: Callable[[], T]) -> T:
        """The memoised result for these exact objects and ``extra``, else ``compute()`` (then remembered)."""
        key = (tuple(map(id, objects)), extra)
        with self._lock:
            entry = self._current.get(key)
            if entry is None:
                entry = self._previous.pop(key, None)
                if entry is not None:
                    self._current[key] = entry
            if entry is not None and _same(entry[0], objects):
                self.hits += 1
                return entry[1]
        value = compute()
        with self._lock:
            self.misses += 1
            self._current[key] = (objects, value)
        return value

    def new_round(self) -> None:
        """Forget the entries not used since the previous call (bounds memory to two rounds of inputs)."""
        with self._lock:
            self._previous, self._current = self._current, {}

    def clear(self) -> None:
        with self._lock:
            self._current, self._previous = {}, {}

    def __len__(self) -> int:
        return len(self._current) + len(self._previous)


def _same(held: tuple[object, ...], given: tuple[object, ...]) -> bool:
    return len(held) == len(given) and all(a is b for a, b in zip(held, given))


__all__ = ["IdentityMemo"]
