"""History: which versions were applied to which clusters, from the KDRollouts' status.history."""

from gitops_kd.history.entries import (
    IN_PROGRESS,
    REVERTED,
    STALLED,
    SUCCEEDED,
    SUPERSEDED,
    HistoryEntry,
    closing_entry,
    entries_of,
)

__all__ = ["IN_PROGRESS", "REVERTED", "STALLED", "SUCCEEDED", "SUPERSEDED", "HistoryEntry", "closing_entry", "entries_of"]
