"""Watch streams: chunked JSON lines of {"type", "object"} with bookmarks, 410 Expired and drop-all support."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kdsim import errors
from kdsim.apiserver import admission
from kdsim.apiserver.objects import matches
from kdsim.apiserver.resources import ResourceType
from kdsim.apiserver.storage import Store, StoreEvent
from kdsim.apiserver.tables import to_table

_DROP = object()


@dataclass(frozen=True)
class WatchRequest:
    """The parsed query of one watch."""

    rt: ResourceType
    namespace: str | None
    resource_version: str
    label_selector: str | None
    field_selector: str | None
    timeout: float
    bookmarks: bool
    send_initial_events: bool
    table: bool
    include_object: str


class WatchHub:
    """The open watches, so that they can all be dropped at once (fault injection, shutdown)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: set[tuple[asyncio.AbstractEventLoop, asyncio.Queue[Any]]] = set()

    def register(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
        with self._lock:
            self._open.add((loop, queue))

    def unregister(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
        with self._lock:
            self._open.discard((loop, queue))

    def drop_all(self) -> int:
        with self._lock:
            watches = list(self._open)
        for loop, queue in watches:
            _deliver(loop, queue, _DROP)
        return len(watches)

    def count(self) -> int:
        with self._lock:
            return len(self._open)


def _deliver(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any], item: Any) -> None:
    """Hand an event to a watch on the server loop (from any thread); a closed loop drops it."""
    try:
        loop.call_soon_threadsafe(queue.put_nowait, item)
    except RuntimeError:
        pass


def _frame(event_type: str, obj: dict[str, Any], wr: WatchRequest) -> bytes:
    if wr.table and event_type not in ("ERROR", "BOOKMARK"):
        obj = to_table(wr.rt, [obj], include_object=wr.include_object)
    return (json.dumps({"type": event_type, "object": obj}, separators=(",", ":")) + "\n").encode()


def _translate(ev: StoreEvent, wr: WatchRequest, labels: Any, fields: Any) -> tuple[str, dict[str, Any]] | None:
    """The event this watcher sees (selector transitions become ADDED/DELETED), or None."""
    rt = wr.rt
    if ev.group != rt.group or ev.plural != rt.plural:
        return None
    if rt.namespaced and wr.namespace and ev.namespace != wr.namespace:
        return None
    obj = dict(ev.obj, apiVersion=rt.api_version, kind=rt.kind)
    now_in = matches(obj, labels, fields)
    if ev.type == "ADDED":
        return ("ADDED", obj) if now_in else None
    if ev.type == "DELETED":
        return ("DELETED", obj) if now_in else None
    was_in = ev.old is not None and matches(dict(ev.old, apiVersion=rt.api_version, kind=rt.kind), labels, fields)
    if now_in and was_in:
        return "MODIFIED", obj
    if now_in:
        return "ADDED", obj
    if was_in:
        return "DELETED", obj
    return None


async def serve(
    request: web.Request, wr: WatchRequest, store: Store, hub: WatchHub, bookmark_interval: float
) -> web.StreamResponse:
    """Stream a watch until timeout, client disconnect, or a drop."""
    labels = admission.label_matcher(wr.label_selector)
    fields = admission.field_matcher(wr.field_selector, wr.rt.kind)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json", "Cache-Control": "no-cache, private"})
    resp.enable_chunked_encoding()
    initial: list[dict[str, Any]] = []
    error: errors.ApiError | None = None
    unsubscribe = None
    rv = wr.resource_version
    with store.lock:
        try:
            since = int(rv) if rv not in ("", "0") else None
        except ValueError:
            raise errors.bad_request(f'invalid resource version: strconv.ParseUint: parsing "{rv}": invalid syntax') from None
        if since is None or wr.send_initial_events:
            ns = wr.namespace if wr.rt.namespaced and wr.namespace else None
            initial = [
                dict(o, apiVersion=wr.rt.api_version, kind=wr.rt.kind)
                for o in store.read_all(wr.rt.group, wr.rt.plural, ns, where=lambda o: matches(o, labels, fields))
            ]
            since = store.resource_version
        try:
            backlog, unsubscribe = store.subscribe(
                since, lambda ev: _deliver(loop, queue, ev), resource=(wr.rt.group, wr.rt.plural)
            )
        except errors.ApiError as exc:
            error, backlog = exc, []
        start_rv = store.resource_version
    await resp.prepare(request)
    if error is not None:
        await resp.write(_frame("ERROR", error.to_status(), wr))
        await resp.write_eof()
        return resp
    hub.register(loop, queue)
    try:
        for obj in initial:
            await resp.write(_frame("ADDED", obj, wr))
        if wr.send_initial_events and wr.bookmarks:
            await resp.write(_frame("BOOKMARK", _bookmark(wr.rt, start_rv, initial_end=True), wr))
        for ev in backlog:
            out = _translate(ev, wr, labels, fields)
            if out:
                await resp.write(_frame(out[0], out[1], wr))
        deadline = time.monotonic() + wr.timeout
        next_bookmark = time.monotonic() + bookmark_interval
        last_rv = max([start_rv] + [e.rv for e in backlog])
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            wait = deadline - now
            if wr.bookmarks:
                wait = min(wait, max(0.0, next_bookmark - now))
            try:
                item = await asyncio.wait_for(queue.get(), timeout=wait)
            except TimeoutError:
                if wr.bookmarks and time.monotonic() >= next_bookmark:
                    await resp.write(_frame("BOOKMARK", _bookmark(wr.rt, last_rv), wr))
                    next_bookmark = time.monotonic() + bookmark_interval
                continue
            if item is _DROP:
                break
            last_rv = item.rv
            out = _translate(item, wr, labels, fields)
            if out:
                await resp.write(_frame(out[0], out[1], wr))
        await resp.write_eof()
    except ConnectionResetError:
        pass
    finally:
        hub.unregister(loop, queue)
        if unsubscribe is not None:
            unsubscribe()
    return resp


def _bookmark(rt: ResourceType, rv: int, initial_end: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
