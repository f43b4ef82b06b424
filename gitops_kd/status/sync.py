"""SYNC of a managed cluster (Synced / OutOfSync / Refused / Suspended) from its KDRollout and its GitOpsKDSource (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitops_kd.constants import ACTIVE_PHASES, STALL_RECORD_UNTRUSTED
from gitops_kd.rollout.model import RolloutStatus
from gitops_kd.status.events import COMMIT_REFUSED, GIT_UNREADABLE
from gitops_kd.status.source import APPLY_REFUSED, ROLLOUT_STALLED, SHORT_SHA, SourceRecord
from gitops_kd.status.source import SUSPENDED as SUSPENDED

SYNCED, OUT_OF_SYNC, REFUSED = "Synced", "OutOfSync", "Refused"  # SUSPENDED: also the source's reason, one meaning
SYNC_STATES = (SYNCED, OUT_OF_SYNC, REFUSED, SUSPENDED)
FAILING_SYNC = (REFUSED,)


@dataclass(frozen=True)
class Sync:
    """How a cluster's live state stands against Git: one of SYNC_STATES and why."""

    status: str
    message: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"status": self.status, "message": self.message}


@dataclass(frozen=True)
class NamedSource:
    """A GitOpsKDSource as read: namespace/name, its record and its Ready condition (status, reason, message)."""

    namespace: str
    name: str
    record: SourceRecord
    ready: str = "Unknown"
    reason: str = ""
    message: str = ""

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> NamedSource:
        meta, status = _section(obj, "metadata"), _section(obj, "status")
        ready = next((c for c in status.get("conditions") or () if isinstance(c, Mapping) and c.get("type") == "Ready"), {})
        return cls(
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            SourceRecord.from_status(status),
            str(ready.get("status") or "Unknown"),
            str(ready.get("reason") or ""),
            str(ready.get("message") or ""),
        )

    @property
    def failing(self) -> bool:
        """Stalled: the head refused, Git unreadable, the record untrusted, an object of the applied commit refused by
        the API server or the applied commit's rollout stalled in a cluster (Ready=False with a Stalled reason)."""
        return self.ready == "False" and self.reason in (
            COMMIT_REFUSED,
            GIT_UNREADABLE,
            STALL_RECORD_UNTRUSTED,
            APPLY_REFUSED,
            ROLLOUT_STALLED,
        )

    def as_dict(self) -> dict[str, Any]:
        r = self.record
        return {
            "namespace": self.namespace,
            "name": self.name,
            "url": r.url,
            "branch": r.branch,
            "appliedRevision": r.applied or None,
            "appliedSubject": r.applied_subject or None,
            "headRevision": r.attempted or None,
            "refused": bool(r.refusal),
            "refusal": refusal_lines(r),
            "ready": self.ready,
            "reason": self.reason,
            "message": self.message,
        }

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def _section(obj: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    value = (obj or {}).get(key)
    return value if isinstance(value, Mapping) else {}


def source_for(rollout: Mapping[str, Any] | None, sources: Sequence[NamedSource]) -> NamedSource | None:
    """The source that applied `rollout`: the only one, else the one whose applied commit the rollout records,
    else (shards of one repository) the first when all agree on applied and attempted commits."""
    if len(sources) == 1:
        return sources[0]
    commit = RolloutStatus.from_obj(_section(rollout, "status")).commit
    match = [s for s in sources if commit and s.record.applied == commit]
    if match:
        return match[0]
    if sources and len({(s.record.applied, s.record.attempted, s.record.refusal) for s in sources}) == 1:
        return sources[0]
    return None


def refusal_lines(record: SourceRecord) -> list[str]:
    return [line for line in record.refusal.splitlines() if line.strip()]


def cluster_sync(rollout: Mapping[str, Any] | None, source: SourceRecord | None) -> Sync:
    """Suspended (spec.suspend) over Refused (the branch head was refused: the cluster stays at the applied
    commit) over OutOfSync (no KDRollout yet, a generation not observed, a rollout under way or stalled, live
    version not the target) over Synced."""
    if rollout is None:
        return Sync(OUT_OF_SYNC, "not applied by gitops-kd yet (no KDRollout)")
    spec, meta = _section(rollout, "spec"), _section(rollout, "metadata")
    status = RolloutStatus.from_obj(_section(rollout, "status"))
    if spec.get("suspend"):
        return Sync(SUSPENDED, "suspended by an operator (`gitops-kd resume` to go on)")
    if source is not None and source.refusal:
        first = refusal_lines(source)
        return Sync(
            REFUSED,
            f"head {source.attempted[:SHORT_SHA]} refused, still at {source.applied[:SHORT_SHA] or '-'}"
            + (f": {first[0]}" if first else ""),
        )
    generation, observed = meta.get("generation") or 0, status.observed_generation or 0
    if generation > observed:
        return Sync(OUT_OF_SYNC, f"generation {generation} not observed yet (observed {observed})")
    phase, live, target = status.phase or "", status.app_version or "", spec.get("targetVersion") or ""
    if phase in ACTIVE_PHASES:
        return Sync(OUT_OF_SYNC, f"{phase} {status.from_version or live or '-'} → {target or '-'}")
    if target and live != target:
        return Sync(OUT_OF_SYNC, f"live {live or '-'}, Git {target}")
    at = f"at {source.applied[:SHORT_SHA]}" if source is not None and source.applied else ""
    return Sync(SYNCED, at)
