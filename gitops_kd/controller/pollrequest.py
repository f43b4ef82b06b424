"""Ask the replica holding the Lease to poll Git now: set reconcile.gitops-kd.io/requestedAt on its GitOpsKDSource.

What `gitops-kd sync` and a standby replica's /webhook both do; the leader's SyncRequests (syncrequest.py) notices
the new value within its CHECK_INTERVAL and polls at once.
"""

from __future__ import annotations

from datetime import UTC, datetime

from gitops_kd.constants import REQUESTED_AT_ANNOTATION, ROLLOUT_API_VERSION
from gitops_kd.status.source import PLURAL
from kubeplumb.rest import RestClient


def request_poll(rest: RestClient, namespace: str, name: str) -> str:
    """Record a poll request on GitOpsKDSource `namespace/name`; returns the requestedAt value written.
    Raises the API server's ApiException (404: no such GitOpsKDSource)."""
    requested = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    rest.patch(ROLLOUT_API_VERSION, PLURAL, namespace, name, {"metadata": {"annotations": {REQUESTED_AT_ANNOTATION: requested}}})
    return requested
