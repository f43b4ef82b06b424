"""AlertHub: fires each condition once, resolves it when it ends, filters by source and severity, fans out."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime

from gitops_kd.alerts.model import SOURCES, WARNING, Alert, at_least
from gitops_kd.alerts.registry import Channel
from gitops_kd.redact import redact, redact_data

log = logging.getLogger(__name__)


def _utcnow() -> datetime:
    return datetime.now(UTC)


def redacted(alert: Alert) -> Alert:
    """``alert`` with its message, labels and details passed through gitops_kd.redact (what every channel sends)."""
    return replace(
        alert,
        message=redact(alert.message),
        labels={k: redact(v) for k, v in alert.labels.items()},
        details=redact_data(dict(alert.details)) if alert.details is not None else None,
    )


class AlertHub:
    """Open alerts by fingerprint; ``fire`` sends a new one once, ``resolve`` sends the end of an open one.
    Never blocks and never raises: each channel queues on its own sender thread. Thread-safe."""

    def __init__(
        self,
        channels: Iterable[Channel] = (),
        *,
        sources: Iterable[str] = SOURCES,
        min_severity: str = WARNING,
        now: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.channels = list(channels)
        self.sources = frozenset(sources)
        unknown = self.sources - set(SOURCES)
        if unknown:
            raise ValueError(f"alert sources {sorted(unknown)}: unknown (known: {', '.join(SOURCES)})")
        self.min_severity = min_severity
        self.now = now
        self.open: dict[str, Alert] = {}
        # Sharding: whether this replica sends ``alert`` (the holder of its object's shard does); every replica
        # tracks what is open, so a new holder neither sends an open alert again nor misses its resolve.
        self.sends: Callable[[Alert], bool] = lambda _alert: True
        self.fired = 0
        self.resolved = 0
        self._lock = threading.Lock()

    def wants(self, alert: Alert) -> bool:
        return alert.source in self.sources and at_least(alert.severity, self.min_severity)

    def fire(self, alert: Alert, *, renew: bool = False) -> bool:
        """Send ``alert`` unless the same condition (fingerprint) is already open (``renew``: send it again, a new
        occurrence of the same condition); True if sent."""
        if not self.wants(alert):
            return False
        if alert.starts_at is None:
            alert = replace(alert, starts_at=self.now())
        with self._lock:
            if alert.fingerprint in self.open and not renew:
                return False
            self.open[alert.fingerprint] = alert
            self.fired += 1
        if not self.sends(alert):
            return False
        log.warning(
            "alert %s [%s] %s %s/%s: %s",
            alert.state,
            alert.source,
            alert.subject.kind,
            alert.subject.namespace,
            alert.subject.name,
            alert.message,
        )
        self._send(alert)
        return True

    def resolve(self, alert: Alert, message: str | None = None) -> bool:
        """Send the end of the open alert with ``alert``'s fingerprint (nothing when none is open)."""
        with self._lock:
            was = self.open.pop(alert.fingerprint, None)
            if was is None:
                return False
            self.resolved += 1
        done = was.resolved(self.now(), message or alert.message, alert.details)
        if not self.sends(done):
            return False
        log.info("alert resolved [%s] %s %s/%s", done.source, done.subject.kind, done.subject.namespace, done.subject.name)
        self._send(done)
        return True

    def open_of(self, source: str) -> list[Alert]:
        with self._lock:
            return [a for a in self.open.values() if a.source == source]

    def flush(self, timeout: float) -> bool:
        return all(c.flush(timeout) for c in self.channels)

    def close(self) -> None:
        for c in self.channels:
            c.close()

    def _send(self, alert: Alert) -> None:
        alert = redacted(alert)
        for c in self.channels:
            try:
                c.send(alert)
            except Exception:  # noqa: BLE001 - alerting is best effort
                log.exception("alert channel %s failed", c.kind.name)
