"""Thread-safe object store: objects by key, a global resourceVersion, event histories and watch subscribers.

Like kube-apiserver's watch cache, the event history is kept per resource (each of `history_limit` events):
a watch of a resource written seldom can resume from an old resourceVersion however busy the others are.

Indexes kept on every write make the per-object questions O(that object): the objects of one resource,
the dependents of an owner uid, whether a uid exists, the objects being deleted; subscribers may ask
for one resource's events only.
"""

from __future__ import annotations

import bisect
import builtins
import copy
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kdsim import errors

Key = tuple[str, str, str, str]  # group, plural, namespace ("" when cluster-scoped), name
HISTORY_LIMIT = 5000  # watch events kept per resource: a watch from an older resourceVersion gets 410 Expired


@dataclass(frozen=True)
class StoreEvent:
    """One change: ADDED / MODIFIED / DELETED of an object, at resourceVersion `rv`."""

    rv: int
    type: str
    group: str
    plural: str
    namespace: str
    obj: dict[str, Any]
    old: dict[str, Any] | None


Subscriber = Callable[[StoreEvent], None]
WriteListener = Callable[[Key], None]
IndexFunc = Callable[[Key, dict[str, Any]], Iterable[str]]


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class Store:
    """The cluster state. Every write gets the next global resourceVersion and is broadcast to subscribers."""

    def __init__(self, history_limit: int = HISTORY_LIMIT) -> None:
        self.lock = threading.RLock()
        self._objects: dict[Key, dict[str, Any]] = {}
        self._counts: Counter[tuple[str, str]] = Counter()  # objects per (group, plural)
        self._rv = 0
        self._history_limit = history_limit
        self._history: dict[tuple[str, str], deque[StoreEvent]] = {}  # per resource
        self._floor = 0  # a watch may start from any rv >= floor (after compaction or a restart)
        self._floors: dict[tuple[str, str], int] = {}  # per resource, once its history is full
        self._subscribers: list[Subscriber] = []
        self._resource_subscribers: dict[tuple[str, str], list[Subscriber]] = {}
        self._listeners: list[Callable[[], None]] = []
        self._write_listeners: list[WriteListener] = []
        self._by_resource: dict[tuple[str, str], dict[Key, None]] = {}
        self._sorted: dict[tuple[str, str], list[Key]] = {}  # _by_resource's keys in order, until one comes or goes
        self._dependents: dict[str, set[Key]] = {}
        self._uids: dict[str, Key] = {}
        self._deleting: set[Key] = set()
        self._field_funcs: dict[str, IndexFunc] = {}
        self._fields: dict[str, dict[str, set[Key]]] = {}

    # -- reads ---------------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    def read(self, group: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A deep copy of one stored object, or None."""
        with self.lock:
            obj = self._objects.get((group, plural, namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def count(self, group: str, plural: str) -> int:
        """How many objects of a resource are stored (constant time: for checks on every request)."""
        with self.lock:
            return self._counts[(group, plural)]

    def read_all(
        self, group: str, plural: str, namespace: str | None = None, *, where: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        """Deep copies of every object of a resource (optionally in one namespace), sorted by namespace/name;
        with `where`, only of the objects it accepts (it reads the stored object: copies are made for matches only)."""
        with self.lock:
            keys = sorted(k for k in self._by_resource.get((group, plural), ()) if namespace is None or k[2] == namespace)
            return [copy.deepcopy(obj) for obj in (self._objects[k] for k in keys) if where is None or where(obj)]

    def read_page(
        self,
        group: str,
        plural: str,
        namespace: str | None,
        *,
        where: Callable[[dict[str, Any]], bool] | None,
        after: tuple[str, str] | None,
        limit: int,
    ) -> tuple[list[dict[str, Any]], tuple[str, str] | None, int]:
        """One page of a LIST in read_all's order, like etcd's range read behind kube-apiserver's continue token:
        (deep copies of up to ``limit`` matches (all when ``limit`` is 0) after the key (namespace, name) ``after``,
        the key of the last one returned when more objects follow it (the next page's ``after``), how many objects
        follow it (matching or not)). The keys stay sorted between writes that add or remove one, so a page costs
        a binary search and its own objects, not a sort and a filter of the whole resource."""
        with self.lock:
            keys = self._sorted_keys(group, plural)
            lo = 0 if namespace is None else bisect.bisect_left(keys, (group, plural, namespace, ""))
            hi = len(keys) if namespace is None else bisect.bisect_left(keys, (group, plural, namespace + "\0", ""))
            if after is not None:
                lo = max(lo, bisect.bisect_right(keys, (group, plural, *after)))
            page: list[dict[str, Any]] = []
            i = lo
            while i < hi and (limit <= 0 or len(page) < limit):
                obj = self._objects[keys[i]]
                i += 1
                if where is None or where(obj):
                    page.append(copy.deepcopy(obj))
            more = i < hi and page != []
            last = keys[i - 1][2:] if more else None
            return page, (last[0], last[1]) if last is not None else None, hi - i

    def _sorted_keys(self, group: str, plural: str) -> list[Key]:
        """The keys of one resource, sorted; kept until a write adds or removes one of them (lock held)."""
        keys = self._sorted.get((group, plural))
        if keys is None:
            keys = self._sorted[(group, plural)] = sorted(self._by_resource.get((group, plural), ()))
        return keys

    def scan_resource(self, group: str, plural: str, fn: Callable[[Key, dict[str, Any]], Any]) -> list[tuple[Key, Any]]:
        """`scan` over the objects of one resource only."""
        with self.lock:
            out = []
            for key in self._by_resource.get((group, plural), ()):
                value = fn(key, self._objects[key])
                if value:
                    out.append((key, value))
            return out

    def dependents(self, owner_uid: str) -> list[Key]:
        """Keys of the objects with an ownerReference to `owner_uid`."""
        with self.lock:
            return sorted(self._dependents.get(owner_uid, ()))

    def has_uid(self, uid: str) -> bool:
        """Whether an object with metadata.uid `uid` is stored."""
        with self.lock:
            return uid in self._uids

    def add_index(self, name: str, fn: IndexFunc) -> None:
        """Index every object (now and after each write) by the values `fn(key, obj)` returns."""
        with self.lock:
            self._field_funcs[name] = fn
            self._fields[name] = {}
            for key, obj in self._objects.items():
                for value in fn(key, obj):
                    self._fields[name].setdefault(value, set()).add(key)

    def indexed(self, name: str, value: str) -> bool:
        """Whether any object's index `name` holds `value`."""
        with self.lock:
            return bool(self._fields[name].get(value))

    def index_values(self, name: str, *, skip: Key | None = None) -> set[str]:
        """Every value index `name` holds for some object (but the object `skip`)."""
        with self.lock:
            return {value for value, keys in self._fields[name].items() if keys and keys != {skip}}

    def deleting(self) -> list[Key]:
        """Keys of the objects carrying a deletionTimestamp (waiting on finalizers)."""
        with self.lock:
            return sorted(self._deleting)

    def scan(self, fn: Callable[[Key, dict[str, Any]], Any]) -> list[tuple[Key, Any]]:
        """(key, fn(key, obj)) for every object where fn returns a truthy value; `obj` must not be modified."""
        with self.lock:
            out = []
            for key, obj in self._objects.items():
                value = fn(key, obj)
                if value:
                    out.append((key, value))
            return out

    def keys(self) -> list[Key]:
        with self.lock:
            return list(self._objects)

    def get(self, api_version: str, plural: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """In-process read: the object `plural` named `name` (namespace None/"" when cluster-scoped)."""
        obj = self.read(group_of(api_version), plural, namespace or "", name)
        if obj is not None:
            obj["apiVersion"] = api_version
        return obj

    def list(
        self, api_version: str, plural: str, namespace: str | None = None, labels: dict[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """In-process list, optionally filtered by exact label matches."""
        out = []
        for obj in self.read_all(group_of(api_version), plural, namespace):
            have = (obj.get("metadata") or {}).get("labels") or {}
            if labels and any(have.get(k) != v for k, v in labels.items()):
                continue
            obj["apiVersion"] = api_version
            out.append(obj)
        return out

    # -- writes (callers hold no invariants beyond the key; semantics live in operations) -------
    def write(self, group: str, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a copy of `obj` (ADDED if new, else MODIFIED) with the next resourceVersion; return `obj`,
        its resourceVersion set (the caller's own object, equal to the stored one)."""
        meta = obj.setdefault("metadata", {})
        key = (group, plural, meta.get("namespace", "") or "", meta["name"])
        with self.lock:
            old = self._objects.get(key)
            self._rv += 1
            meta["resourceVersion"] = str(self._rv)
            stored = copy.deepcopy(obj)
            self._objects[key] = stored
            if old is None:
                self._counts[(group, plural)] += 1
            self._index(key, stored, old)
            self._emit(StoreEvent(self._rv, "MODIFIED" if old is not None else "ADDED", group, plural, key[2], stored, old))
            return obj

    def remove(self, group: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """Delete one object; the DELETED event carries a fresh resourceVersion."""
        key = (group, plural, namespace, name)
        with self.lock:
            old = self._objects.pop(key, None)
            if old is None:
                return None
            self._counts[(group, plural)] -= 1
            self._index(key, None, old)
            self._rv += 1
            gone_obj = copy.deepcopy(old)
            gone_obj["metadata"]["resourceVersion"] = str(self._rv)
            self._emit(StoreEvent(self._rv, "DELETED", group, plural, namespace, gone_obj, old))
            return copy.deepcopy(gone_obj)

    def _index(self, key: Key, obj: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        """Move `key` from the index entries of `old` to those of `obj` (either may be None); lock held."""
        if old is not None:
            old_meta = old.get("metadata") or {}
            for uid in _owner_uids(old_meta):
                deps = self._dependents.get(uid)
                if deps is not None:
                    deps.discard(key)
                    if not deps:
                        del self._dependents[uid]
            if self._uids.get(str(old_meta.get("uid") or "")) == key:
                del self._uids[str(old_meta.get("uid") or "")]
            self._deleting.discard(key)
            for name, fn in self._field_funcs.items():
                for value in fn(key, old):
                    keys = self._fields[name].get(value)
                    if keys is not None:
                        keys.discard(key)
                        if not keys:
                            del self._fields[name][value]
        if obj is None:
            bucket = self._by_resource.get(key[:2])
            if bucket is not None and bucket.pop(key, 0) is None:
                self._sorted.pop(key[:2], None)
            return
        bucket = self._by_resource.setdefault(key[:2], {})
        if key not in bucket:
            bucket[key] = None
            self._sorted.pop(key[:2], None)
        meta = obj.get("metadata") or {}
        for uid in _owner_uids(meta):
            self._dependents.setdefault(uid, set()).add(key)
        if meta.get("uid"):
            self._uids[str(meta["uid"])] = key
        if meta.get("deletionTimestamp"):
            self._deleting.add(key)
        for name, fn in self._field_funcs.items():
            for value in fn(key, obj):
                self._fields[name].setdefault(value, set()).add(key)

    def _emit(self, event: StoreEvent) -> None:
        resource = (event.group, event.plural)
        history = self._history.get(resource)
        if history is None:
            history = self._history[resource] = deque(maxlen=self._history_limit)
        history.append(event)
        if len(history) == history.maxlen:
            self._floors[resource] = max(self._floor_of(resource), history[0].rv - 1)
        for sub in list(self._subscribers):
            sub(event)
        for sub in list(self._resource_subscribers.get((event.group, event.plural), ())):
            sub(event)
        key = (event.group, event.plural, event.namespace, event.obj["metadata"]["name"])
        for write_listener in self._write_listeners:
            write_listener(key)
        for listener in self._listeners:
            listener()

    # -- watch ---------------------------------------------------------------------------------
    def subscribe(
        self, since: int | None, callback: Subscriber, *, resource: tuple[str, str] | None = None
    ) -> tuple[builtins.list[StoreEvent], Callable[[], None]]:
        """Events after `since` (None: none) and a live subscription, atomically; 410 if `since` is compacted.

        `resource` (group, plural): only that resource's events, in the backlog and live.
        """
        with self.lock:
            backlog: builtins.list[StoreEvent] = []
            if since is not None and since < self._rv:
                floor = self._floor_of(resource) if resource is not None else max([self._floor, *self._floors.values()])
                if since < floor:
                    raise errors.gone(f"too old resource version: {since} ({floor + 1})")
                histories = [self._history.get(resource, ())] if resource is not None else list(self._history.values())
                backlog = sorted((e for h in histories for e in h if e.rv > since), key=lambda e: e.rv)
            subscribers = self._subscribers if resource is None else self._resource_subscribers.setdefault(resource, [])
            subscribers.append(callback)

        def unsubscribe() -> None:
            with self.lock:
                if callback in subscribers:
                    subscribers.remove(callback)

        return backlog, unsubscribe

    def _floor_of(self, resource: tuple[str, str]) -> int:
        return self._floors.get(resource, self._floor)

    def compact(self) -> None:
        """Forget the event history (like etcd compaction): watches from older versions get 410 Expired."""
        with self.lock:
            self._history.clear()
            self._floors.clear()
            self._floor = self._rv

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call `listener` (under the store lock, so keep it cheap) after every write."""
        self._listeners.append(listener)

    def on_write(self, listener: WriteListener) -> None:
        """Call `listener(key)` (under the store lock, so keep it cheap) after every write or removal of `key`."""
        self._write_listeners.append(listener)

    # -- persistence ---------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                "resourceVersion": self._rv,
                "objects": [
                    {"group": k[0], "plural": k[1], "object": copy.deepcopy(v)} for k, v in sorted(self._objects.items())
                ],
            }

    def entries(self, keys: Iterable[Key]) -> tuple[int, builtins.list[tuple[Key, dict[str, Any] | None]]]:
        """(resourceVersion, [(key, copy of its object or None when removed)]) for `keys`, atomically."""
        with self.lock:
            out: builtins.list[tuple[Key, dict[str, Any] | None]] = []
            for key in keys:
                obj = self._objects.get(key)
                out.append((key, copy.deepcopy(obj) if obj is not None else None))
            return self._rv, out

    def restore(self, rv: int, entries: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        """Load saved objects; resourceVersions continue from `rv`; history starts empty."""
        with self.lock:
            self._objects.clear()
            self._by_resource.clear()
            self._sorted.clear()
            self._dependents.clear()
            self._uids.clear()
            self._deleting.clear()
            for name in self._fields:
                self._fields[name] = {}
            for group, plural, obj in entries:
                meta = obj["metadata"]
                key = (group, plural, meta.get("namespace", "") or "", meta["name"])
                old = self._objects.get(key)
                self._objects[key] = obj
                self._index(key, obj, old)
            self._counts = Counter((k[0], k[1]) for k in self._objects)
            self._rv = rv
            self._history.clear()
            self._floors.clear()
            self._floor = rv


def _owner_uids(meta: dict[str, Any]) -> set[str]:
    return {str(r.get("uid")) for r in meta.get("ownerReferences") or () if r.get("uid")}
