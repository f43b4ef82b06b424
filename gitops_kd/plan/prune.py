"""Prune: the KDClusters and KDApps gitops-kd applied that Git no longer has, deleted when asked (pure).

A candidate is a live object carrying gitops-kd's applied-spec annotation (so objects made by hand or by
KubeDirector's catalog are never touched) whose key is not in the desired state. With ``prune`` on
(``gitops-kd run --prune``, as Flux's ``prune: true``) clusters are deleted first and an app only once
no live cluster uses it (KubeDirector refuses to delete an app in use); an object annotated
``gitops-kd.io/prune: disabled`` is kept. With prune off, candidates are only reported (``Plan.kept``).
A desired state with no KDApp and no KDCluster at all never prunes: that is a refusal, as Argo CD refuses
to auto-sync an application to empty, since it is more likely a broken commit than a wish to delete
everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitops_kd.constants import APPLIED_ANNOTATION, PRUNE_ANNOTATION
from gitops_kd.diff.engine import annotation, users_of
from gitops_kd.kd.layout import KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.observed import ObservedState
from gitops_kd.plan.actions import Prune, Refusal
from gitops_kd.spec.state import DesiredState

DISABLED = "disabled"


@dataclass(frozen=True)
class PruneResult:
    """``actions`` to run, ``kept`` (descriptions of candidates left alone, and why), ``refusals``."""

    actions: tuple[Prune, ...] = ()
    kept: tuple[str, ...] = ()
    refusals: tuple[Refusal, ...] = ()


def _kept(kind: str, key: tuple[str, str], why: str) -> str:
    return f"{kind} {key[0]}/{key[1]}: not in Git, kept {why}"


def prune(desired: DesiredState, observed: ObservedState, *, enabled: bool) -> PruneResult:
    """What to do with the live objects gitops-kd applied that are not in ``desired`` (clusters first)."""
    found: list[tuple[str, tuple[str, str], Mapping[str, Any], str]] = [
        (KDCLUSTER_KIND, k, c.raw, c.uid) for k, c in sorted(observed.clusters.items()) if k not in desired.clusters
    ]
    found += [
        (KDAPP_KIND, k, a.raw, str((a.raw.get("metadata") or {}).get("uid") or ""))
        for k, a in sorted(observed.apps.items())
        if k not in desired.apps
    ]
    found = [f for f in found if annotation(f[2], APPLIED_ANNOTATION) is not None]
    if not found:
        return PruneResult()
    if not enabled:
        return PruneResult(kept=tuple(_kept(kind, key, "(prune is off)") for kind, key, _, _ in found))
    if not desired.apps and not desired.clusters:
        return PruneResult(
            refusals=(
                Refusal(
                    ".",
                    "apps/, clusters/",
                    (
                        f"the commit has no KDApp and no KDCluster: refusing to prune the {len(found)} "
                        "object(s) gitops-kd applied (delete them with kubectl if that is really meant)"
                    ),
                ),
            )
        )
    actions: list[Prune] = []
    kept: list[str] = []
    for kind, key, raw, uid in found:
        users = users_of(desired, observed, key) if kind == KDAPP_KIND else ()
        if annotation(raw, PRUNE_ANNOTATION) == DISABLED:
            kept.append(_kept(kind, key, f"({PRUNE_ANNOTATION}: {DISABLED})"))
        elif users:
            kept.append(_kept(kind, key, f"while KDCluster {users[0].namespace}/{users[0].name} uses it"))
        elif not (raw.get("metadata") or {}).get("deletionTimestamp"):
            actions.append(Prune(kind, key[0], key[1], uid))
    return PruneResult(tuple(actions), tuple(kept))
