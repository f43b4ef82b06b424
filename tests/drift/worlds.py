"""Helpers for the pure drift tests: edit an observed (kdworld) cluster the way a kubectl user would."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from plan.kdworld import HELLO1, HELLO_DEV, NS, desired, live_app, live_cluster, observed, set_cluster  # noqa: F401

from gitops_kd.observe import ObservedCluster, ObservedState
from gitops_kd.spec.freeze import thaw


def steady(app: Any = HELLO1, cluster: Any = HELLO_DEV) -> ObservedState:
    """hello-dev running hello 1.0.0, managed and in sync (with ``app`` and ``cluster`` as live objects)."""
    return observed((app,), (live_cluster(app, cluster),))


def cluster(state: ObservedState) -> ObservedCluster:
    return state.clusters[(NS, "hello-dev")]


def edit_template(state: ObservedState, role: str, edit: Callable[[dict[str, Any]], None]) -> ObservedState:
    c = cluster(state)
    sts = c.statefulsets[role]
    template = thaw(sts.template)
    edit(template)
    return set_cluster(state, replace(c, statefulsets={**c.statefulsets, role: replace(sts, template=template)}))


def edit_sts(state: ObservedState, role: str, **changes: Any) -> ObservedState:
    c = cluster(state)
    return set_cluster(state, replace(c, statefulsets={**c.statefulsets, role: replace(c.statefulsets[role], **changes)}))


def edit_service_ports(state: ObservedState, name: str, ports: list[dict[str, Any]]) -> ObservedState:
    c = cluster(state)
    services = tuple(replace(s, ports=tuple(ports)) if s.name == name else s for s in c.services)
    return set_cluster(state, replace(c, services=services))


def edit_raw(state: ObservedState, edit: Callable[[dict[str, Any]], None], *, app: bool = False) -> ObservedState:
    if app:
        a = state.apps[(NS, "hello")]
        raw = thaw(a.raw)
        edit(raw)
        return replace(state, apps={**state.apps, (NS, "hello"): replace(a, raw=raw)})
    c = cluster(state)
    raw = thaw(c.raw)
    edit(raw)
    return set_cluster(state, replace(c, raw=raw))


def app_container(template: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in template["spec"]["containers"] if c["name"] == "app")
