"""Plan: a pure function from (desired, observed) to an ordered list of actions."""

from gitops_kd.plan.actions import (
    Action,
    ApplyApp,
    ApplyCluster,
    CheckGate,
    DeletePod,
    EnsureRollout,
    FinishRollout,
    HandleFailure,
    NoteStep,
    PatchServicePorts,
    PatchTemplate,
    Plan,
    Prune,
    RecordInSync,
    Refusal,
    RunStep,
    SetOnDelete,
    Stall,
    StartGate,
    Wait,
)
from typing import Any


def __getattr__(name: str) -> Any:
    """``plan`` is imported lazily: diff/ imports plan.actions, and the planner imports diff/."""
    if name == "plan":
        from gitops_kd.plan.planner import plan

        return plan
    raise AttributeError(f"module 'gitops_kd.plan' has no attribute {name!r}")

__all__ = [
    "Action", "ApplyApp", "ApplyCluster", "CheckGate", "DeletePod", "EnsureRollout", "FinishRollout", "HandleFailure", "NoteStep",
    "PatchServicePorts", "PatchTemplate", "Plan", "Prune", "RecordInSync", "Refusal", "RunStep", "SetOnDelete", "Stall",
    "StartGate", "Wait", "plan",
]
