"""DriftAlerter: fan-out of drift occurrences to Events, Prometheus metrics, a JSON log line and a webhook.

Per reconcile, ``process(drifts, policy)`` runs the tracker (one alert per occurrence, not per reconcile):
- new occurrence: Event ``DriftDetected`` (Warning) on the drifted object naming each field, expected ->
  actual and the Git commit; ``drift_detected_total`` +1 and ``drift_active`` 1; a WARNING log line with the
  payload as JSON (and as ``extra={"drift": payload}``); the webhook payload with ``state: detected``;
- still present: ``drift_active`` kept at 1, nothing else;
- resolved: Event ``DriftReverted`` (Normal; ``DriftResolved`` when the policy was alert-only, i.e. someone
  else put it back), ``drift_active`` 0, an INFO log line, the webhook payload with ``state: resolved``.
Events, metrics and the notifier are each optional. Sinks fail soft: an alert never breaks a reconcile.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

from gitops_kd.drift.model import Drift, ObjectKey, object_ref
from gitops_kd.drift.policy import REVERT, DriftPolicy
from gitops_kd.drift.tracker import DriftTracker, Occurrence, Transitions
from kubeplumb.names import NORMAL, WARNING

log = logging.getLogger(__name__)

DRIFT_DETECTED, DRIFT_REVERTED, DRIFT_RESOLVED = "DriftDetected", "DriftReverted", "DriftResolved"
DETECTED, RESOLVED = "detected", "resolved"


class EventSink(Protocol):
    """What execute.events.EventRecorder offers: one Event about an object dict."""

    def record(self, obj: Mapping[str, Any], reason: str, message: str, *, type_: str = ...) -> None: ...


class Metrics(Protocol):
    """Where drift counts and gauges go (server.metrics.ControllerMetrics)."""

    def drift_detected(self, kind: str, namespace: str, name: str) -> None: ...

    def drift_ongoing(self, kind: str, namespace: str, name: str) -> None: ...

    def drift_resolved(self, kind: str, namespace: str, name: str) -> None: ...


class Notifier(Protocol):
    """Where alert payloads are sent (server.notify.WebhookNotifier); must not block."""

    def notify(self, payload: Mapping[str, Any]) -> object: ...


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def payload(occ: Occurrence, action: str, state: str = DETECTED) -> dict[str, Any]:
    """The webhook/log payload: object, fields [{path, expected, actual}], commit, action, detectedAt, state."""
    d = occ.drift
    ref = object_ref(d)
    obj = {"apiVersion": ref["apiVersion"], "kind": d.kind, "namespace": d.namespace, "name": d.name}
    if d.cluster:
        obj["cluster"] = d.cluster
    return {
        "object": obj,
        "fields": [f.as_json() for f in d.fields],
        "commit": d.commit,
        "action": action,
        "detectedAt": _stamp(occ.detected_at),
        "state": state,
    }


def detected_message(d: Drift, action: str) -> str:
    what = "; ".join(f.describe() for f in d.fields)
    then = "reverting to Git" if action == "reverted" else "not reverted (drift policy alert-only)"
    return f"out-of-band change to {len(d.fields)} field(s) gitops-kd owns: {what} (Git commit {d.commit[:12]}); {then}"


def resolved_message(d: Drift, reverted: bool) -> str:
    fields = ", ".join(d.paths)
    how = "reverted to Git" if reverted else "back in line with Git"
    return f"{fields} {how} (Git commit {d.commit[:12]})"


class DriftAlerter:
    """Turns each reconcile's drift list into alerts, once per occurrence."""

    def __init__(
        self,
        *,
        events: EventSink | None = None,
        metrics: Metrics | None = None,
        notifier: Notifier | None = None,
        now: Callable[[], datetime] = _utcnow,
        tracker: DriftTracker | None = None,
    ) -> None:
        self.events = events
        self.metrics = metrics
        self.notifier = notifier
        self.now = now
        self.tracker = tracker if tracker is not None else DriftTracker()

    @property
    def active(self) -> tuple[Drift, ...]:
        """The drifts currently open (as last seen)."""
        return tuple(o.drift for _, o in sorted(self.tracker.open.items()))

    def process(self, drifts: Sequence[Drift], policy: DriftPolicy, *, scope: Iterable[ObjectKey] | None = None) -> Transitions:
        """Alert new occurrences, keep ongoing ones active, close resolved ones (only within ``scope``)."""
        t = self.tracker.update(drifts, self.now(), scope=scope)
        self.emit(t, policy)
        return t

    def emit(self, t: Transitions, policy: DriftPolicy) -> None:
        """Alert the transitions of one classification (drift/classify.py)."""
        for occ in t.new:
            self._detected(occ, policy.action(occ.drift))
        for occ in t.ongoing:
            if self.metrics is not None:
                self._safe(partial(self.metrics.drift_ongoing, occ.drift.kind, occ.drift.namespace, occ.drift.name))
        for occ in t.resolved:
            self._resolved(occ, policy.mode(occ.drift) == REVERT)

    def _detected(self, occ: Occurrence, action: str) -> None:
        d, body = occ.drift, payload(occ, action)
        log.warning("drift detected: %s", json.dumps(body, sort_keys=True, default=str), extra={"drift": body})
        if self.metrics is not None:
            self._safe(lambda: self.metrics.drift_detected(d.kind, d.namespace, d.name))  # type: ignore[union-attr]
        if self.events is not None:
            self._safe(
                lambda: self.events.record(  # type: ignore[union-attr]
                    object_ref(d),
                    DRIFT_DETECTED,
                    detected_message(d, action),
                    type_=WARNING,
                )
            )
        if self.notifier is not None:
            self._safe(lambda: self.notifier.notify(body))  # type: ignore[union-attr]

    def _resolved(self, occ: Occurrence, reverted: bool) -> None:
        d = occ.drift
        body = payload(occ, "reverted" if reverted else "alert-only", RESOLVED)
        log.info("drift resolved: %s", json.dumps(body, sort_keys=True, default=str), extra={"drift": body})
        if self.metrics is not None:
            self._safe(lambda: self.metrics.drift_resolved(d.kind, d.namespace, d.name))  # type: ignore[union-attr]
        if self.events is not None:
            reason = DRIFT_REVERTED if reverted else DRIFT_RESOLVED
            self._safe(
                lambda: self.events.record(  # type: ignore[union-attr]
                    object_ref(d),
                    reason,
                    resolved_message(d, reverted),
                    type_=NORMAL,
                )
            )
        if self.notifier is not None:
            self._safe(lambda: self.notifier.notify(body))  # type: ignore[union-attr]

    @staticmethod
    def _safe(fn: Callable[[], Any]) -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - alerting is best effort
            log.exception("drift alert sink failed")
