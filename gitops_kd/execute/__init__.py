"""Execute: apply one planned action at a time against the cluster, idempotently."""

from gitops_kd.execute.executor import Executor
from gitops_kd.execute.outcome import Outcome

__all__ = ["Executor", "Outcome"]
