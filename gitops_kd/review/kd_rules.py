"""What KubeDirector and the in-use rules refuse of a change, taken offline from the base revision as running (pure).

The base revision's desired state stands for the live cluster (review/synthetic.as_live: every cluster settled
at its app's version), and the head revision is judged with the very rule functions the controller applies
against the live cluster: diff/refusals (a KDCluster's ``spec.app`` / ``spec.appCatalog`` read-only, the role
properties of a role with members, a KDApp's distroID, a removed role that has members, the upgrade stanza's
from[] / downgrade rules) and plan/held (what stock KubeDirector cannot do while it holds a KDApp clusters use:
a role added, a changed cardinality or config package). The flavour picks the rules: stock KubeDirector's, or
its live-app-upgrade branch's, where a ``spec.app`` switch is the branch's native upgrade and is judged by
``branch_switch_refusals`` instead of stock's read-only rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gitops_kd.diff.engine import app_applied, users_of
from gitops_kd.diff.model import Refusal
from gitops_kd.diff.refusals import app_refusals, cluster_refusals
from gitops_kd.diff.switch import one_way, switch_of, switch_refusals
from gitops_kd.kd.flavour import LIVE_UPGRADE, STOCK
from gitops_kd.kd.layout import KDAPP_KIND
from gitops_kd.kd.normalize import stored_spec
from gitops_kd.observed import ObservedApp, ObservedCluster, ObservedState
from gitops_kd.plan.held import held, held_refusals
from gitops_kd.review.synthetic import as_live
from gitops_kd.spec.errors import FieldError
from gitops_kd.spec.freeze import thaw
from gitops_kd.spec.model import KDCluster
from gitops_kd.spec.state import DesiredState


def _app_errors(head: DesiredState, live: ObservedState) -> list[FieldError]:
    """Each KDApp of ``head`` against the base's: the in-use rules (diff) and, while held, plan/held's."""
    out: list[FieldError] = []
    for key, app in sorted(head.apps.items()):
        have = live.apps.get(key)
        users = users_of(head, live, key)
        found = app_refusals(app, have, users)
        hold = held(app, key, have, users, not app_applied(app, key, have)) if have is not None else None
        if hold is not None and have is not None:
            found += held_refusals(app, hold, have)
        out += [_error(r, app.document) for r in found]
    return out


def _cluster_errors(head: DesiredState, live: ObservedState, *, app_read_only: bool) -> list[FieldError]:
    """Each KDCluster of ``head`` against the base's, as KubeDirector's cluster webhook judges an update;
    ``app_read_only`` False leaves a ``spec.app`` switch to the branch's rules (the others still apply)."""
    out: list[FieldError] = []
    for key, cluster in sorted(head.clusters.items()):
        have = live.clusters.get(key)
        judged = cluster if app_read_only or have is None else replace(cluster, app=have.app)
        found = cluster_refusals(judged, have)
        if not app_read_only and have is not None and have.app != cluster.app:
            found += branch_switch_refusals(cluster, have, head, live)
        out += [_error(r, cluster.document) for r in found]
    return out


def branch_switch_refusals(cluster: KDCluster, have: ObservedCluster, head: DesiredState, live: ObservedState) -> list[Refusal]:
    """What KubeDirector's live-app-upgrade branch refuses of switching ``have`` (the base's cluster, taken as
    configured) to ``cluster.app`` (its native upgrade), and what the target's upgrade stanza refuses of it: the
    controller's own rule (diff/switch.py), applied offline."""
    branch = on_branch(live)
    switch = switch_of(head, branch, (have.namespace, have.name))
    return switch_refusals(head, branch, switch) if switch is not None and cluster.app == switch.target[1] else []


def on_branch(live: ObservedState) -> ObservedState:
    """``live`` (a base revision taken as running) as KubeDirector's live-app-upgrade branch would show it: its
    flavour, and each KDApp as the branch stores it."""
    return replace(live, flavour=LIVE_UPGRADE, apps={key: _as_stored(app) for key, app in live.apps.items()})


def switch_warnings(base: DesiredState, head: DesiredState, flavour: str = STOCK) -> list[FieldError]:
    """On the live-app-upgrade branch: a warning on the ``spec.app`` of each KDCluster that ``head`` switches
    natively from ``base``'s app (diff/switch.one_way: `git revert` works only until KubeDirector finishes it);
    none on stock, where the switch is refused."""
    if flavour != LIVE_UPGRADE:
        return []
    live = on_branch(as_live(base))
    out: list[FieldError] = []
    for key, cluster in sorted(head.clusters.items()):
        switch = switch_of(head, live, key)
        running = live.apps.get(switch.running) if switch is not None else None
        target = head.apps.get(switch.target) if switch is not None else None
        if switch is None or switch.rollback or running is None or target is None:
            continue
        out.append(FieldError(cluster.source, "spec.app", one_way(switch, running.version, target.version), cluster.document))
    return out


def _as_stored(app: ObservedApp) -> ObservedApp:
    """The base's KDApp as KubeDirector stores it (kd/normalize), as a live read of it shows it."""
    raw = thaw(app.raw)
    raw["spec"] = stored_spec(KDAPP_KIND, raw.get("spec") or {})
    return replace(app, raw=raw)


def _stock(head: DesiredState, live: ObservedState) -> list[FieldError]:
    return _app_errors(head, live) + _cluster_errors(head, live, app_read_only=True)


def _live_app_upgrade(head: DesiredState, live: ObservedState) -> list[FieldError]:
    return _app_errors(head, live) + _cluster_errors(head, live, app_read_only=False)


RULES: dict[str, Callable[[DesiredState, ObservedState], list[FieldError]]] = {STOCK: _stock, LIVE_UPGRADE: _live_app_upgrade}
"""Per KubeDirector flavour (kd/flavour.py): the rules a change from a running base is judged by."""


def _error(refusal: Refusal, document: int | None) -> FieldError:
    return FieldError(refusal.file, refusal.field, refusal.reason, document)


def change_errors(base: DesiredState, head: DesiredState, flavour: str = STOCK) -> list[FieldError]:
    """What ``flavour``'s KubeDirector and the in-use rules refuse of moving a cluster that runs ``base`` to
    ``head``, as errors naming file, field and reason (no position: the caller locates them)."""
    return RULES[flavour](head, as_live(base))


__all__ = ["RULES", "branch_switch_refusals", "change_errors", "on_branch", "switch_warnings"]
