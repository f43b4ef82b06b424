"""EventRecorder: writes core/v1 Events about KDClusters/KDApps; a failed write is logged, never raised. The same
event again (same object, type, reason and message) is counted on the Event first written, as client-go's
EventCorrelator does (count + 1, lastTimestamp), not written anew."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from gitops_kd.status.conditions import rfc3339
from gitops_kd.status.events import event_body, involved
from kubeplumb.names import NORMAL
from kubeplumb.rest import RestClient

log = logging.getLogger(__name__)
SEEN_LIMIT = 4096  # events remembered for counting repeats (client-go's LRU holds 4096 too)


class EventRecorder:
    """Records Events through `rest`; `now` is the clock."""

    def __init__(self, rest: RestClient, now: Callable[[], datetime], *, component: str = "gitops-kd") -> None:
        self._rest = rest
        self._now = now
        self._component = component
        self._host = socket.gethostname()
        self._seen: dict[tuple[Any, ...], tuple[str, int]] = {}  # the same event -> (its Event's name, count)
        self._lock = threading.Lock()

    def record(self, obj: Mapping[str, Any], reason: str, message: str, *, type_: str = NORMAL) -> None:
        """One Event about `obj` (a full object dict with apiVersion/kind/metadata)."""
        body = event_body(
            involved(obj), reason, message, type_=type_, now=self._now(), component=self._component, host=self._host
        )
        log.info(
            "event %s %s %s/%s: %s",
            type_,
            reason,
            body["involvedObject"].get("namespace"),
            body["involvedObject"].get("name"),
            message,
        )
        ref, namespace = body["involvedObject"], body["metadata"]["namespace"]
        key = (ref.get("kind"), ref.get("namespace"), ref.get("name"), ref.get("uid"), type_, reason, body["message"])
        with self._lock:
            seen = self._seen.get(key)
        try:
            if seen is not None:
                try:
                    self._rest.patch(
                        "v1", "events", namespace, seen[0], {"count": seen[1] + 1, "lastTimestamp": rfc3339(self._now())}
                    )
                    with self._lock:
                        self._seen[key] = (seen[0], seen[1] + 1)
                    return
                except Exception:  # noqa: BLE001 - gone (expired, deleted): a new Event below
                    pass
            self._rest.create("v1", "events", namespace, body)
            with self._lock:
                self._seen[key] = (body["metadata"]["name"], 1)
                if len(self._seen) > SEEN_LIMIT:
                    self._seen.pop(next(iter(self._seen)))
        except Exception as exc:  # noqa: BLE001 - events are best effort, as in client-go
            log.warning("could not record event %s on %s: %s", reason, ref.get("name"), exc)

    def record_ref(
        self, api_version: str, kind: str, namespace: str, name: str, reason: str, message: str, *, type_: str = NORMAL
    ) -> None:
        """Like record() for an object known only by reference (it may not exist)."""
        self.record(
            {"apiVersion": api_version, "kind": kind, "metadata": {"namespace": namespace, "name": name}},
            reason,
            message,
            type_=type_,
        )
