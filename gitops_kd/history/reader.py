"""Reads the history of an app from the cluster: every KDRollout whose cluster runs or ran the app."""

from __future__ import annotations

from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL
from gitops_kd.history.entries import HistoryEntry, entries_of, ran_app, sort_key
from kubeplumb.rest import RestClient


def app_history(rest: RestClient, app: str, namespace: str | None) -> tuple[list[HistoryEntry], int]:
    """(entries oldest first, number of KDRollouts of clusters that run or ran the app) in ``namespace`` (None: every
    namespace)."""
    items = rest.list(ROLLOUT_API_VERSION, ROLLOUT_PLURAL, namespace).get("items") or []
    mine = [r for r in items if ran_app(r, app)]
    entries = [e for r in mine for e in entries_of(r)]
    return sorted(entries, key=sort_key), len(mine)
