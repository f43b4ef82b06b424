"""Plan: a pure function from (desired, observed) to an ordered list of actions."""

from gitops_kd.plan.actions import (
    Action,
    ApplyApp,
    ApplyCluster,
    CheckGate,
    DeletePod,
    EnsureRollout,
    FinishRollout,
    PatchServicePorts,
    PatchTemplate,
    Plan,
    Refusal,
    RunStep,
    SetOnDelete,
    Stall,
    StartGate,
    Wait,
)

__all__ = [
    "Action", "ApplyApp", "ApplyCluster", "CheckGate", "DeletePod", "EnsureRollout", "FinishRollout",
    "PatchServicePorts", "PatchTemplate", "Plan", "Refusal", "RunStep", "SetOnDelete", "Stall",
    "StartGate", "Wait",
]
