"""Plan: a pure function from (desired, observed) to an ordered list of actions."""

from gitops_kd.plan.actions import (
    Action,
    ApplyApp,
    ApplyCluster,
    CheckGate,
    ClearBreakGlass,
    DeletePod,
    EnsureRollout,
    FinishRollout,
    HandleFailure,
    LiftStall,
    MarkMissing,
    NoteStep,
    PatchServicePorts,
    PatchTemplate,
    Plan,
    Prune,
    RecordInSync,
    RecordStages,
    Refusal,
    RestoreLabels,
    RunStep,
    SetOnDelete,
    Stall,
    StartGate,
    Wait,
)
from gitops_kd.plan.planner import plan

__all__ = [
    "Action", "ApplyApp", "ApplyCluster", "CheckGate", "ClearBreakGlass", "DeletePod", "EnsureRollout",
    "FinishRollout", "HandleFailure", "LiftStall", "MarkMissing", "NoteStep", "PatchServicePorts", "PatchTemplate",
    "Plan", "Prune", "RecordInSync", "RecordStages", "Refusal", "RestoreLabels", "RunStep", "SetOnDelete", "Stall", "StartGate",
    "Wait", "plan",
]
