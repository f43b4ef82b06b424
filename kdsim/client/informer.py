"""A list+watch cache of one resource type as plain dicts, with event handlers (client-go's informer, reduced).

One daemon thread per informer: it lists (emitting ADDED/MODIFIED/DELETED against the cache), then
watches from the list's resourceVersion with bookmarks; a watch that ends is resumed from the last seen
resourceVersion; 410 Expired relists; other errors are retried with capped exponential backoff.
Handlers run on the informer thread and must be quick (queue a key, do the work elsewhere).
Indexes (client-go's Indexers) map a value computed from each object (its controller's uid, a label, a
claim it mounts) to the objects carrying it, so a controller finds an object's dependents without
copying or scanning the whole cache.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from kdsim.client.rest import RestClient, WatchStream

log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any], "dict[str, Any] | None"], None]
IndexFunc = Callable[[dict[str, Any]], Iterable[str]]
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
WATCH_TIMEOUT_SECONDS = 300
MAX_BACKOFF_SECONDS = 5.0


def object_key(obj: Mapping[str, Any]) -> str:
    """"namespace/name" (or "name" for cluster-scoped objects), the work-queue key of an object."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def split_key(key: str) -> tuple[str | None, str]:
    """Inverse of object_key: (namespace or None, name)."""
    if "/" in key:
        ns, name = key.split("/", 1)
        return ns, name
    return None, key


class _Expired(Exception):
    """The watch's resourceVersion is too old: relist."""


class Informer:
    """Watch-backed cache of one resource type (optionally filtered by a label selector)."""

    def __init__(self, api_client: ApiClient, api_version: str, plural: str, *,
                 label_selector: str | None = None) -> None:
        self.api_version = api_version
        self.plural = plural
        self.label_selector = label_selector
        self._rest = RestClient(api_client)
        self._handlers: list[Handler] = []
        self._cache: dict[tuple[str, str], dict[str, Any]] = {}
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, set[tuple[str, str]]]] = {}
        self._lock = threading.RLock()
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None
        self._rv: str | None = None

    def add_handler(self, fn: Handler) -> None:
        """Call fn(event_type, obj, old_obj) for each change; objects already cached are replayed as ADDED."""
        with self._lock:
            self._handlers.append(fn)
            existing = list(self._cache.values()) if self._synced.is_set() else []
        for obj in existing:
            self._call(fn, ADDED, obj, None)

    def add_index(self, name: str, fn: IndexFunc) -> None:
        """Index the cached objects by the values `fn(obj)` returns (call before start)."""
        with self._lock:
            self._index_funcs[name] = fn
            self._indexes[name] = {}
            for key, obj in self._cache.items():
                self._index(key, obj, None)

    def by_index(self, name: str, value: str) -> list[dict[str, Any]]:
        """Deep copies of the cached objects whose index `name` holds `value`, sorted by key."""
        with self._lock:
            keys = sorted(self._indexes[name].get(value) or ())
            return copy.deepcopy([self._cache[k] for k in keys])

    def indexed(self, name: str, value: str) -> bool:
        """Whether any cached object's index `name` holds `value`."""
        with self._lock:
            return bool(self._indexes[name].get(value))

    def has(self, namespace: str | None, name: str) -> bool:
        """Whether the object is cached (no copy)."""
        with self._lock:
            return (namespace or "", name) in self._cache

    def _index(self, key: tuple[str, str], obj: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        """Move `key` from the index values of `old` to those of `obj` (either may be None); lock held."""
        for name, fn in self._index_funcs.items():
            index = self._indexes[name]
            for value in set(fn(old)) if old is not None else ():
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in set(fn(obj)) if obj is not None else ():
                index.setdefault(value, set()).add(key)

    def start(self) -> None:
        """Start the list+watch thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True, name=f"kdsim-informer-{self.plural}")
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching; wait for the thread to end."""
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Block until the first list has filled the cache; False on timeout."""
        return self._synced.wait(timeout)

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """A deep copy of the cached object, or None."""
        with self._lock:
            obj = self._cache.get((namespace or "", name))
            return copy.deepcopy(obj) if obj is not None else None

    def list(self, namespace: str | None = None,
             labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """Deep copies of the cached objects in `namespace` (all if None) carrying `labels`, sorted by key."""
        with self._lock:
            items = [obj for (ns, _), obj in sorted(self._cache.items())
                     if (namespace is None or ns == namespace) and _has_labels(obj, labels)]
            return copy.deepcopy(items)

    def _run(self) -> None:
        backoff = 0.0
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                self._watch()
                backoff = 0.0
            except _Expired:
                need_list = True
                backoff = 0.0
            except Exception as exc:  # noqa: BLE001 - network and server errors: back off and retry
                if self._stop.is_set():
                    break
                backoff = min(MAX_BACKOFF_SECONDS, max(0.05, backoff * 2))
                log.warning("informer %s: %s; retrying in %.2fs", self.plural, exc, backoff)
                need_list = need_list or getattr(exc, "status", None) == 410
                self._stop.wait(backoff)

    def _list(self) -> None:
        listing = self._rest.list(self.api_version, self.plural, label_selector=self.label_selector)
        fresh = {_cache_key(o): o for o in listing.get("items") or []}
        events: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
        with self._lock:
            for key, obj in fresh.items():
                old = self._cache.get(key)
                if old is None:
                    events.append((ADDED, obj, None))
                elif _rv_of(old) != _rv_of(obj):
                    events.append((MODIFIED, obj, old))
            events.extend((DELETED, old, old) for key, old in self._cache.items() if key not in fresh)
            self._cache = fresh
            for name in self._indexes:
                self._indexes[name] = {}
            for key, obj in fresh.items():
                self._index(key, obj, None)
            self._rv = (listing.get("metadata") or {}).get("resourceVersion") or self._rv
        self._synced.set()
        for event in events:
            self._dispatch(*event)

    def _watch(self) -> None:
        try:
            stream = self._rest.watch(self.api_version, self.plural, None, resource_version=self._rv,
                                      label_selector=self.label_selector, timeout_seconds=WATCH_TIMEOUT_SECONDS)
        except ApiException as exc:
            if exc.status == 410:
                raise _Expired() from exc
            raise
        self._stream = stream
        try:
            for event in stream:
                if self._stop.is_set():
                    return
                self._handle_event(event)
        finally:
            self._stream = None
            stream.close()

    def _handle_event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Expired()
            raise ApiException(status=obj.get("code") or 500, reason=f"{obj.get('reason')}: {obj.get('message')}")
        if kind == "BOOKMARK":
            self._rv = _rv_of(obj) or self._rv
            return
        if kind not in (ADDED, MODIFIED, DELETED):
            return
        key = _cache_key(obj)
        with self._lock:
            old = self._cache.get(key)
            if kind == DELETED:
                self._cache.pop(key, None)
                self._index(key, None, old)
            else:
                self._cache[key] = obj
                self._index(key, obj, old)
            self._rv = _rv_of(obj) or self._rv
        if kind != DELETED:
            kind = ADDED if old is None else MODIFIED
        self._dispatch(kind, obj, old)

    def _dispatch(self, kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        with self._lock:
            handlers = list(self._handlers)
        for fn in handlers:
            self._call(fn, kind, obj, old)

    def _call(self, fn: Handler, kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        try:
            fn(kind, obj, old)
        except Exception:  # noqa: BLE001 - a broken handler must not stop the informer
            log.exception("informer %s: handler failed on %s %s", self.plural, kind, object_key(obj))


def _has_labels(obj: Mapping[str, Any], labels: Mapping[str, str] | None) -> bool:
    have = (obj.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == v for k, v in (labels or {}).items())


def _cache_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def _rv_of(obj: Mapping[str, Any]) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv is not None else None
