"""Embedded Kubernetes API server: storage, registry/discovery, watch, TLS, kubeconfig, persistence, faults."""

from kdsim.apiserver.faults import FaultInjector, FaultRule
from kdsim.apiserver.server import ApiServer
from kdsim.apiserver.storage import Store

__all__ = ["ApiServer", "FaultInjector", "FaultRule", "Store"]
