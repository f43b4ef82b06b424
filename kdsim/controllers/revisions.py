"""Pure ControllerRevision logic of the StatefulSet controller: revision data, hash, naming, history pruning."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubeplumb.names import SAFE_ALPHABET

HASH_LABEL = "controller.kubernetes.io/hash"
POD_REVISION_LABEL = "controller-revision-hash"


def revision_data(sts: Mapping[str, Any]) -> dict[str, Any]:
    """What a StatefulSet revision records: `{"spec": {"template": {..., "$patch": "replace"}}}`."""
    template = copy.deepcopy((sts.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def _fnv1_32(data: bytes, h: int = 0x811C9DC5) -> int:
    for byte in data:
        h = (h * 0x01000193) & 0xFFFFFFFF
        h ^= byte
    return h


def safe_encode(text: str) -> str:
    """Kubernetes' rand.SafeEncodeString: each character mapped into an alphabet without vowels."""
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in text)


def revision_hash(data: Mapping[str, Any], collision_count: int | None) -> str:
    """FNV-1 32 of the serialized data (+ the collision count), safe-encoded, as HashControllerRevision."""
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    h = _fnv1_32(raw)
    if collision_count is not None:
        h = _fnv1_32(str(collision_count).encode(), h)
    return safe_encode(str(h))


def build_revision(sts: Mapping[str, Any], number: int, collision_count: int | None) -> dict[str, Any]:
    """A new ControllerRevision object `<sts>-<hash>` owned by the StatefulSet."""
    meta = sts.get("metadata") or {}
    data = revision_data(sts)
    digest = revision_hash(data, collision_count)
    labels = dict(((sts.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {})
    labels[HASH_LABEL] = digest
    prefix = meta.get("name", "")[:223]
    revision: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": f"{prefix}-{digest}",
            "namespace": meta.get("namespace"),
            "labels": labels,
            "ownerReferences": [owner_reference(sts)],
        },
        "data": data,
        "revision": number,
    }
    if meta.get("annotations"):
        revision["metadata"]["annotations"] = dict(meta["annotations"])
    return revision


def owner_reference(sts: Mapping[str, Any]) -> dict[str, Any]:
    """The controller ownerReference a StatefulSet puts on what it creates."""
    meta = sts.get("metadata") or {}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def sort_revisions(revisions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Oldest first, by revision number then name."""
    return sorted((dict(r) for r in revisions), key=lambda r: (int(r.get("revision") or 0), r["metadata"]["name"]))


def next_revision_number(revisions: Sequence[Mapping[str, Any]]) -> int:
    return max((int(r.get("revision") or 0) for r in revisions), default=0) + 1


def equal_revisions(revisions: Sequence[Mapping[str, Any]], candidate: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Existing revisions recording the same template as `candidate` (oldest first)."""
    return [dict(r) for r in revisions if r.get("data") == candidate.get("data")]


def template_of(revision: Mapping[str, Any]) -> dict[str, Any]:
    """The pod template recorded in a revision."""
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def revisions_to_prune(
    revisions: Sequence[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], current: str, update: str, history_limit: int
) -> list[str]:
    """Names of revisions to delete: the oldest ones not used by a pod, current or update, beyond the limit."""
    live = {current, update}
    live.update(((p.get("metadata") or {}).get("labels") or {}).get(POD_REVISION_LABEL, "") for p in pods)
    history = [r["metadata"]["name"] for r in sort_revisions(revisions) if r["metadata"]["name"] not in live]
    excess = len(history) - max(0, history_limit)
    return history[:excess] if excess > 0 else []
