"""Read the GitOpsKDSources (each controller instance's record of its Git source) as `gitops-kd status` and the
web UI show them: every namespace when allowed, else the one named."""

from __future__ import annotations

from kubernetes.client.exceptions import ApiException

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.status.source import PLURAL
from gitops_kd.status.sync import NamedSource
from kubeplumb.rest import RestClient


def read_sources(rest: RestClient, namespace: str) -> tuple[list[NamedSource], str]:
    """Every GitOpsKDSource (all namespaces: they live in the controller's); when that list is forbidden,
    those of `namespace`. Second: a note when none could be read."""
    for where in (None, namespace):
        try:
            items = rest.list(ROLLOUT_API_VERSION, PLURAL, where).get("items") or []
        except ApiException as exc:
            if exc.status in (401, 403):
                continue
            if exc.status == 404:
                return [], "the GitOpsKDSource CRD is not installed: applied revision and branch head unknown"
            raise
        found = sorted((NamedSource.from_object(o) for o in items), key=lambda s: (s.namespace, s.name))
        return found, "" if found else "no GitOpsKDSource: no gitops-kd controller has run against this cluster"
    return [], "not allowed to list GitOpsKDSources: applied revision and branch head unknown"


__all__ = ["read_sources"]
