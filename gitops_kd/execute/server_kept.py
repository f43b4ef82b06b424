"""The write-once guard: a KDApp / KDCluster write the server stored differently from Git is not repeated.

After a write, when the stored object still fails diff.engine.applied (KubeDirector's webhook or a pruning CRD
kept fields that neither Git's spelling nor KD's known normalisation (kd/normalize.py) explains), the object
gets SERVER_KEPT_ANNOTATION = "<digest>@<generation>" (one metadata-only patch; no generation change) and a Warning
Event SERVER_KEPT_FIELDS naming the fields. `applied` then holds for that Git revision while the spec stays
(same generation), so the planner does not write it again, across restarts too (the memory is on the object).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from gitops_kd.constants import APPLIED_ANNOTATION, SERVER_KEPT_ANNOTATION, SERVER_KEPT_FIELDS
from gitops_kd.diff.engine import applied, kept_marker
from gitops_kd.drift.compare import missing_or_changed_stored
from gitops_kd.execute.context import ExecContext
from gitops_kd.kd.layout import API_VERSION
from kubeplumb.names import WARNING

log = logging.getLogger(__name__)


def kept_fields(stored: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[str]:
    """Paths of Git's spec the stored object lacks or has otherwise (as drift names them)."""
    return [
        c.path for c in missing_or_changed_stored(stored, {"spec": manifest.get("spec") or {}}, str(manifest.get("kind", "")))
    ]


def mark(
    ctx: ExecContext, plural: str, stored: dict[str, Any] | None, manifest: Mapping[str, Any]
) -> tuple[str, dict[str, Any] | None]:
    """After a write whose answer is ``stored``: mark the object when the server kept it different from Git.
    Returns what to add to the Outcome's message ("" when the stored object is what Git asks for) and the object
    as the server answered the mark (None: not marked): the next plan must read the mark, not only the write
    before it, or it writes the same revision again."""
    if stored is None or applied(stored, manifest):
        return "", None
    digest = ((manifest.get("metadata") or {}).get("annotations") or {}).get(APPLIED_ANNOTATION)
    fields = kept_fields(stored, manifest)
    if digest is None or not fields:
        return "", None
    meta = stored.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    marked = ctx.rest.patch(
        API_VERSION,
        plural,
        namespace,
        name,
        {
            "metadata": {
                "resourceVersion": meta.get("resourceVersion"),
                "annotations": {SERVER_KEPT_ANNOTATION: kept_marker(digest, stored)},
            }
        },
    )
    said = (
        f"the API server stored {', '.join(fields)} differently from Git (KubeDirector's admission webhook "
        f"or the CRD schema keeps them): not written again for this Git revision"
    )
    ctx.events.record(stored, SERVER_KEPT_FIELDS, said, type_=WARNING)
    log.warning("%s %s/%s: %s", stored.get("kind", plural), namespace, name, said)
    return f"; {said}", marked
