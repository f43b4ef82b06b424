"""EventRecorder: writes core/v1 Events about KDClusters/KDApps; a failed write is logged, never raised."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from gitops_kd.status.events import event_body, involved
from kubeplumb.names import NORMAL
from kubeplumb.rest import RestClient

log = logging.getLogger(__name__)


class EventRecorder:
    """Records Events through `rest`; `now` is the clock."""

    def __init__(self, rest: RestClient, now: Callable[[], datetime], *, component: str = "gitops-kd") -> None:
        self._rest = rest
        self._now = now
        self._component = component
        self._host = socket.gethostname()

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
        try:
            self._rest.create("v1", "events", body["metadata"]["namespace"], body)
        except Exception as exc:  # noqa: BLE001 - events are best effort, as in client-go
            log.warning("could not record event %s on %s: %s", reason, body["involvedObject"].get("name"), exc)

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
