"""Embedded Kubernetes API server: storage, registry/discovery, watch, TLS, kubeconfig, persistence, faults."""

from gitops_kd.sim.apiserver.faults import FaultInjector, FaultRule
from gitops_kd.sim.apiserver.server import ApiServer
from gitops_kd.sim.apiserver.storage import Store

__all__ = ["ApiServer", "FaultInjector", "FaultRule", "Store"]
