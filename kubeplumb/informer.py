"""A list+watch cache of any Kubernetes resource as plain dicts, with event handlers (client-go's informer).

Usage::

    pods = Informer(cluster.api_client(), "v1", "pods", namespace="default",
                    label_selector="app=web", resync_seconds=30)
    pods.add_handler(lambda event, obj, old: queue.add(object_key(obj)))   # "ADDED"/"MODIFIED"/"DELETED"
    pods.start()
    pods.wait_synced(10)
    pod = pods.get("default", "web-0")                 # a deep copy, or None
    web = pods.list("default", {"app": "web"})
    ...
    pods.stop()

One daemon thread per informer: it lists (emitting ADDED/MODIFIED/DELETED against the cache), then
watches from the list's resourceVersion with bookmarks; a watch that ends is resumed from the last seen
resourceVersion; 410 Expired relists; connection errors are retried with capped exponential backoff.
With resync_seconds, every cached object is re-delivered as MODIFIED (obj is old) at that period.
With a ``transform`` (client-go's SetTransform), each listed or watched object is replaced by what it
returns before it is cached and handed to handlers (e.g. fields dropped, a frozen copy); ``get``/``list``
always return plain mutable copies.
Indexes (client-go's Indexers) map a value computed from each object (its controller's uid, a label, a
claim it mounts) to the objects carrying it, so a controller finds an object's dependents without
copying or scanning the whole cache.
Handlers run on the informer thread and must be quick (queue a key, do the work elsewhere).
"""

from __future__ import annotations

import builtins
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from kubeplumb.rest import RestClient, WatchStream, status_of

log = logging.getLogger(__name__)

Handler = Callable[[str, Any, Any], None]
"""handler(event, obj, old): obj and old are cached objects (as the transform made them), old None when new."""
Transform = Callable[[dict[str, Any]], Mapping[str, Any]]
IndexFunc = Callable[[Any], Iterable[str]]
"""index(obj) -> the values to index a cached object (as the transform made it) under."""
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
LIST_PAGE = 100  # objects per LIST request (client-go pages by 500; smaller pages keep the start-up peak low)


def object_key(obj: Mapping[str, Any]) -> str:
    """ "namespace/name" (or "name" for cluster-scoped objects), the work-queue key of an object."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def labels_match(obj: Mapping[str, Any], selector: Mapping[str, str] | None) -> bool:
    """True when every key=value of `selector` is among the object's labels."""
    if not selector:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def split_key(key: str) -> tuple[str | None, str]:
    """Inverse of object_key: (namespace or None, name)."""
    if "/" in key:
        ns, name = key.split("/", 1)
        return ns, name
    return None, key


class _Expired(Exception):
    """The watch's resourceVersion is too old: relist."""


class Informer:
    """Watch-backed cache of one resource type (optionally one namespace, label selector and field selector)."""

    def __init__(
        self,
        api_client: ApiClient,
        api_version: str,
        plural: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_seconds: float | None = None,
        watch_timeout_seconds: int = 300,
        max_backoff_seconds: float = 5.0,
        transform: Transform | None = None,
        list_page: int = LIST_PAGE,
    ) -> None:
        self.api_version = api_version
        self.plural = plural
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector  # e.g. metadata.name=X: one object (RBAC resourceNames allow it)
        self.resync_seconds = resync_seconds
        self._rest = RestClient(api_client)
        self._watch_timeout = watch_timeout_seconds
        self._max_backoff = max_backoff_seconds
        self._handlers: list[Handler] = []
        self._transform = transform
        self._list_page = list_page
        self._cache: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, set[tuple[str, str]]]] = {}
        self._lock = threading.RLock()
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None
        self._rv: str | None = None
        self._next_resync = 0.0

    # -- public surface ----------------------------------------------------------------------------

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

    def by_index(self, name: str, value: str) -> builtins.list[dict[str, Any]]:
        """Deep (plain, mutable) copies of the cached objects whose index `name` holds `value`, sorted by key."""
        with self._lock:
            keys = sorted(self._indexes[name].get(value) or ())
            items = [self._cache[k] for k in keys]
        return [_plain(obj) for obj in items]

    def indexed(self, name: str, value: str) -> bool:
        """Whether any cached object's index `name` holds `value`."""
        with self._lock:
            return bool(self._indexes[name].get(value))

    def has(self, namespace: str | None, name: str) -> bool:
        """Whether the object is cached (no copy)."""
        with self._lock:
            return (namespace or "", name) in self._cache

    def start(self) -> None:
        """Start the list+watch thread."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"informer-{self.plural}-{self.namespace or 'all'}")
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

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """A deep (plain, mutable) copy of the cached object, or None."""
        with self._lock:
            obj = self._cache.get((namespace or "", name))
        return _plain(obj) if obj is not None else None

    def list(self, namespace: str | None = None, label_selector: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """Deep (plain, mutable) copies of the cached objects in `namespace` (all if None) matching the labels,
        sorted by key."""
        with self._lock:
            items = [
                obj
                for (ns, _), obj in sorted(self._cache.items())
                if (namespace is None or ns == namespace) and labels_match(obj, label_selector)
            ]
        return [_plain(obj) for obj in items]

    def shared(self, namespace: str | None = None) -> builtins.list[Mapping[str, Any]]:
        """The cached objects of `namespace` (all if None) themselves, sorted by key: no copy, so callers must
        not modify them (the informer never does: a change replaces the object)."""
        with self._lock:
            return [obj for (ns, _), obj in sorted(self._cache.items()) if namespace is None or ns == namespace]

    # -- the loop ----------------------------------------------------------------------------------
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
                log.info("informer %s: resourceVersion %s expired; relisting", self.plural, self._rv)
                need_list = True
                backoff = 0.0
            except Exception as exc:  # noqa: BLE001 - network and server errors: back off and retry
                if self._stop.is_set():
                    break
                backoff = min(self._max_backoff, max(0.05, backoff * 2))
                log.warning("informer %s: %s; retrying in %.2fs", self.plural, _describe(exc), backoff)
                if status_of(exc) == 410:
                    need_list = True
                self._stop.wait(backoff * (0.8 + 0.4 * random.random()))

    def _list(self) -> None:
        """List in pages of ``list_page`` objects (client-go's pager): the raw objects of one page at a time are in memory
        before the transform, not those of the whole resource. The watch starts from the first page's
        resourceVersion (every page's, on a real API server): nothing after it is missed."""
        fresh: dict[tuple[str, str], Mapping[str, Any]] = {}
        token, rv = None, None
        while True:
            page = self._rest.list(
                self.api_version,
                self.plural,
                self.namespace,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                limit=self._list_page,
                continue_token=token,
            )
            fresh.update((_cache_key(o), self._transformed(o)) for o in page.get("items") or [])
            meta = page.get("metadata") or {}
            rv = rv or meta.get("resourceVersion")
            token = meta.get("continue")
            del page
            if not token:
                break
        events: list[tuple[str, Mapping[str, Any], Mapping[str, Any] | None]] = []
        with self._lock:
            for key, obj in fresh.items():
                old = self._cache.get(key)
                if old is None:
                    events.append((ADDED, obj, None))
                elif _rv_of(old) != _rv_of(obj):
                    events.append((MODIFIED, obj, old))
            for key, old in self._cache.items():
                if key not in fresh:
                    events.append((DELETED, old, old))
            self._cache = fresh
            for name in self._indexes:
                self._indexes[name] = {}
            for key, obj in fresh.items():
                self._index(key, obj, None)
            self._rv = rv or self._rv
        self._next_resync = time.monotonic() + (self.resync_seconds or 0)
        self._synced.set()
        for event in events:
            self._dispatch(*event)

    def _watch(self) -> None:
        timeout = self._watch_timeout
        if self.resync_seconds:
            remaining = self._next_resync - time.monotonic()
            if remaining <= 0:
                self._resync()
                remaining = self.resync_seconds
            timeout = max(1, min(timeout, int(remaining + 0.999)))
        try:
            stream = self._rest.watch(
                self.api_version,
                self.plural,
                self.namespace,
                resource_version=self._rv,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                timeout_seconds=timeout,
            )
        except ApiException as exc:
            if exc.status == 410:
                raise _Expired() from exc
            raise
        self._stream = stream
        try:
            if self._stop.is_set():
                return
            for event in stream:
                self._handle_event(event)
                if self._stop.is_set():
                    return
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
        rv = _rv_of(obj)
        if kind == "BOOKMARK":
            self._rv = rv or self._rv
            return
        if kind not in (ADDED, MODIFIED, DELETED):
            log.warning("informer %s: ignoring watch event of type %r", self.plural, kind)
            return
        key = _cache_key(obj)
        obj = self._transformed(obj)
        with self._lock:
            old = self._cache.get(key)
            if kind == DELETED:
                self._cache.pop(key, None)
                self._index(key, None, old)
            else:
                self._cache[key] = obj
                self._index(key, obj, old)
            self._rv = rv or self._rv
        if kind == ADDED and old is not None:
            kind = MODIFIED
        elif kind == MODIFIED and old is None:
            kind = ADDED
        self._dispatch(kind, obj, old)

    def _index(self, key: tuple[str, str], obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None) -> None:
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

    def _resync(self) -> None:
        with self._lock:
            items = list(self._cache.values())
        for obj in items:
            self._dispatch(MODIFIED, obj, obj)
        self._next_resync = time.monotonic() + (self.resync_seconds or 0)

    def _transformed(self, obj: dict[str, Any]) -> Mapping[str, Any]:
        return obj if self._transform is None else self._transform(obj)

    def _dispatch(self, kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        with self._lock:
            handlers = list(self._handlers)
        for fn in handlers:
            self._call(fn, kind, obj, old)

    def _call(self, fn: Handler, kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        try:
            fn(kind, obj, old)
        except Exception:  # noqa: BLE001 - a broken handler must not stop the informer
            log.exception("informer %s: handler %r failed on %s %s", self.plural, fn, kind, object_key(obj))


def start_synced(informers: Iterable[Informer], timeout: float = 30.0) -> bool:
    """Start every informer, then wait for each one's first list (controller-runtime's cache Start and
    WaitForCacheSync): what a controller does before its workers take keys. False if one timed out."""
    started = list(informers)
    for informer in started:
        informer.start()
    return all([informer.wait_synced(timeout) for informer in started])


def _cache_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def _rv_of(obj: Mapping[str, Any]) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv is not None else None


def _plain(value: Any) -> Any:
    """A plain mutable deep copy of a cached value (whatever mappings and sequences the transform made)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _describe(exc: BaseException) -> str:
    status = status_of(exc)
    return f"HTTP {status} {getattr(exc, 'reason', '')}".strip() if status else f"{type(exc).__name__}: {exc}"
