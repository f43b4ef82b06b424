"""core/v1 Events as client-go's event recorder writes them (name `<object>.<hex nanos>`, repeats counted)."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubeplumb.rest import RestClient

log = logging.getLogger(__name__)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _micro_now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


def reference(obj: Mapping[str, Any], field_path: str = "", kind: str = "", api_version: str = "") -> dict[str, Any]:
    """The involvedObject of an event about `obj` (a container's events name it in fieldPath); `kind` and
    `api_version` stand in for an object read from a list, which carries neither."""
    meta = obj.get("metadata") or {}
    ref = {
        "kind": obj.get("kind") or kind,
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "apiVersion": obj.get("apiVersion") or api_version,
        "resourceVersion": meta.get("resourceVersion"),
    }
    if field_path:
        ref["fieldPath"] = field_path
    return {k: v for k, v in ref.items() if v}


class EventRecorder:
    """Writes the Events of one component (`statefulset-controller`, `kubelet` with its node as host, or a
    new-style reporter like `default-scheduler`). Best effort, as the real recorder: a failed write is logged."""

    def __init__(
        self,
        rest: RestClient,
        component: str,
        kind: tuple[str, str],
        *,
        host: str = "",
        instance: str = "",
        new_style: bool = False,
    ) -> None:
        self.rest, self.component, self.host = rest, component, host
        self.kind = kind  # (kind, apiVersion) of the objects this component's events are about
        self.instance = instance or host
        self.new_style = new_style  # written through events.k8s.io by the real component: no source, an eventTime
        self._lock = threading.Lock()
        self._seen: dict[tuple[Any, ...], tuple[str, int]] = {}  # aggregation key -> (event name, count)
        self._queue: queue.Queue[tuple[dict[str, Any], str, str, str, str] | None] = queue.Queue()
        self._worker: threading.Thread | None = None

    def event(
        self, obj: Mapping[str, Any], kind: str, reason: str, message: str, *, field_path: str = "", action: str = ""
    ) -> None:
        """Queue the event; a background thread writes the queue in order (the caller never waits on it)."""
        self._queue.put((reference(obj, field_path, *self.kind), kind, reason, message, action))
        with self._lock:
            if self._worker is None:
                self._worker = threading.Thread(target=self._drain, name=f"events-{self.component}", daemon=True)
                self._worker.start()

    def close(self) -> None:
        """Write what is queued, then stop the writer thread."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            self._queue.put(None)
            worker.join(5)

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                self._write(*item)
            except Exception as exc:  # noqa: BLE001 - best effort, as client-go's recorder: never the caller's failure
                log.debug("%s: event not written: %s", self.component, exc)

    def _write(self, ref: dict[str, Any], kind: str, reason: str, message: str, action: str) -> None:
        namespace = ref.get("namespace") or "default"
        key = (ref.get("uid"), ref.get("fieldPath"), kind, reason, message)
        with self._lock:
            seen = self._seen.get(key)
        try:
            if seen is not None:
                name, count = seen
                self.rest.patch("v1", "events", namespace, name, {"count": count + 1, "lastTimestamp": _now()})
                with self._lock:
                    self._seen[key] = (name, count + 1)
                return
            name = f"{ref.get('name')}.{time.time_ns():x}"
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": ref,
                "reason": reason,
                "message": message,
                "type": kind,
                "reportingComponent": self.component,
                "reportingInstance": self.instance,
            }
            if self.new_style:
                body.update(source={}, eventTime=_micro_now(), action=action or reason)
            else:
                body.update(
                    source={k: v for k, v in (("component", self.component), ("host", self.host)) if v},
                    firstTimestamp=_now(),
                    lastTimestamp=_now(),
                    count=1,
                )
            self.rest.create("v1", "events", namespace, body)
            with self._lock:
                self._seen[key] = (name, 1)
                if len(self._seen) > 4096:
                    self._seen.pop(next(iter(self._seen)))
        except ApiException as exc:
            log.debug("%s: event %s on %s/%s not written: %s", self.component, reason, namespace, ref.get("name"), exc.status)
            with self._lock:
                self._seen.pop(key, None)
