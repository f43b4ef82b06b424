"""Drift baselines that survive a restart: a digest of what Git asks of one cluster, kept on its KDRollout (pure).

The guard counts a cluster as "seen in sync" per commit, in memory. So that an out-of-band edit made while
the controller was down is still alerted (not silently reverted as convergence), the guard records
a digest (``RolloutStatus.synced_digest``) on the cluster's KDRollout once it is in sync. The digest covers everything the
owned fields are rendered from (the KDCluster and KDApp manifests from Git, the version the rollout came
from, the renderer's version), so an unrelated commit does not change it and a relevant one does: after a
restart, a recorded digest equal to the current one means any owned difference is drift.
"""

from __future__ import annotations

import hashlib
from typing import Any

from gitops_kd import __version__
from gitops_kd.diff.engine import app_for, manifests_digest
from gitops_kd.observed import ObservedState
from gitops_kd.spec.model import compact_json
from gitops_kd.spec.state import DesiredState, Key


def digest(desired: DesiredState, observed: ObservedState, key: Key) -> str | None:
    """The digest of what Git asks of cluster ``key`` (None: not in Git, no app, or not live)."""
    cluster, live = desired.clusters.get(key), observed.clusters.get(key)
    if cluster is None or live is None:
        return None
    found = app_for(desired, key, cluster)
    if found is None:
        return None
    app_key, app = found
    doc: dict[str, Any] = {
        "manifests": manifests_digest(cluster, key, app, app_key),  # memoised: the same objects cost a lookup
        "fromVersion": live.rollout.from_version if live.rollout is not None else None,
        "renderer": __version__,
    }
    return hashlib.sha256(compact_json(doc).encode()).hexdigest()[:32]


def recorded(observed: ObservedState, key: Key) -> str | None:
    """The digest the cluster's KDRollout records as last seen in sync, or None."""
    live = observed.clusters.get(key)
    return live.rollout.synced_digest if live is not None and live.rollout is not None else None
