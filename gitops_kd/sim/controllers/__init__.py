"""Simulated cluster controllers (KubeDirector, StatefulSet controller, kubelet) started beside the API server."""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gitops_kd.sim.cluster import EmbeddedCluster

log = logging.getLogger(__name__)

# Each module defines `start(cluster: EmbeddedCluster) -> Stoppable`. Order matters only for start-up
# logging; the controllers are level-triggered and independent.
CONTROLLER_MODULES = (
    "gitops_kd.sim.controllers.statefulset",
    "gitops_kd.sim.controllers.kubelet",
    "gitops_kd.sim.controllers.kubedirector",
    "gitops_kd.sim.controllers.servicelb",
)


class Stoppable(Protocol):
    """A running controller."""

    def stop(self) -> None: ...


def start_all(cluster: "EmbeddedCluster") -> list[Stoppable]:
    """Start every simulated controller against `cluster`; return handles to stop them."""
    started: list[Stoppable] = []
    for name in CONTROLLER_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                log.debug("controller module %s not present", name)
                continue
            raise
        started.append(module.start(cluster))
    return started
