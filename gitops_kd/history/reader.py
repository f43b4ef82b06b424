"""Reads the history of an app from the cluster: every KDRollout whose spec.app is the app."""

from __future__ import annotations

from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL
from gitops_kd.history.entries import HistoryEntry, entries_of, sort_key
from kubeplumb.rest import RestClient


def app_history(rest: RestClient, app: str, namespace: str | None) -> tuple[list[HistoryEntry], int]:
    """(entries oldest first, number of KDRollouts of the app) in ``namespace`` (None: all namespaces)."""
    items = rest.list(ROLLOUT_API_VERSION, ROLLOUT_PLURAL, namespace).get("items") or []
    mine = [r for r in items if (r.get("spec") or {}).get("app") == app]
    entries = [e for r in mine for e in entries_of(r)]
    return sorted(entries, key=sort_key), len(mine)
