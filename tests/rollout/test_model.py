"""The typed KDRollout status (gitops_kd/rollout/model.py): read back what earlier versions wrote, write merge patches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitops_kd.constants import Phase, StallReason
from gitops_kd.rollout.model import PodProgress, RolloutStatus, Stage

DATA = Path(__file__).parent / "data"
# KDRollouts written by the version before the typed status (an e2e run of tests/e2e/test_upgrade_steps.py's gated
# upgrade on kdsim, saved as the API server returned them): mid-upgrade at the gate, and finished.
PREVIOUS = ("kdrollout-gating-v0.json", "kdrollout-finished-v0.json")


def _status(name: str) -> dict[str, Any]:
    return dict(json.loads((DATA / name).read_text())["status"])


@pytest.mark.parametrize("name", PREVIOUS)
def test_a_status_written_by_the_previous_version_reads_and_writes_back_unchanged(name: str) -> None:
    """Invariant: reading a stored status and writing it back changes nothing (no field lost or re-shaped)."""
    stored = _status(name)
    status = RolloutStatus.from_obj(stored)
    assert status.to_obj() == stored
    assert RolloutStatus.from_obj(status.to_obj()) == status
    assert not status.extra, "every field the previous version wrote is a typed field"


def test_the_previous_versions_gating_status_is_typed() -> None:
    status = RolloutStatus.from_obj(_status("kdrollout-gating-v0.json"))
    assert status.phase is Phase.UPGRADING and status.phase == "Upgrading"
    assert status.target_version == "2.0.0" and status.from_version == "1.0.0" and status.direction == "upgrade"
    pod = status.current_pod
    assert pod is not None and status.pods[pod].hook_done and not status.pods[pod].gate_passed
    assert status.stage(pod) is None, "the previous version recorded no stage: it reads as unknown, not as a guess"
    assert [h.result for h in status.history] == ["Deployed"]
    assert {c["type"] for c in status.conditions} == {"Ready", "Reconciling"}


def test_missing_keys_get_defaults() -> None:
    assert RolloutStatus.from_obj(None) == RolloutStatus()
    empty = RolloutStatus.from_obj({"pods": {"p-0": {}}})
    assert empty.phase is None and empty.pods == {} and empty.history == ()
    entry = PodProgress.from_obj({"revision": "r1"})
    assert (entry.stage, entry.hook_done, entry.migrations_done, entry.exec_failures) == (None, False, (), 0)


def test_values_outside_the_enums_are_kept_as_text_and_unknown_keys_are_kept() -> None:
    """A newer writer's phase, stall reason, stage or field survives a read and a write by this version."""
    stored = {
        "phase": "Paused",
        "stalledReason": "DiskFull",
        "newField": {"a": 1},
        "pods": {"p-0": {"revision": "r", "stage": "draining", "newPodField": 3}},
    }
    status = RolloutStatus.from_obj(stored)
    assert status.phase == "Paused" and not isinstance(status.phase, Phase)
    assert status.stalled_reason == "DiskFull" and status.pods["p-0"].stage == "draining"
    assert status.extra == {"newField": {"a": 1}} and status.pods["p-0"].extra == {"newPodField": 3}
    assert status.to_obj() == stored


def test_enum_members_compare_and_serialise_as_their_values() -> None:
    """Existing CRs and `kubectl wait --for=jsonpath='{.status.phase}'=Stalled` keep working: the values are the
    strings the CRD's enum lists."""
    status = RolloutStatus(
        phase=Phase.STALLED, stalled_reason=StallReason.POD_NOT_READY, pods={"p-0": PodProgress("r", stage=Stage.WAITING_GATE)}
    )
    assert json.loads(json.dumps(status.to_obj())) == {
        "phase": "Stalled",
        "stalledReason": "PodNotReady",
        "pods": {"p-0": {"revision": "r", "stage": "waiting-gate"}},
    }
    assert RolloutStatus.from_obj(status.to_obj()).stalled_reason is StallReason.POD_NOT_READY


def test_to_patch_deletes_what_the_new_status_no_longer_holds() -> None:
    before = RolloutStatus.from_obj(_status("kdrollout-gating-v0.json"))
    after = RolloutStatus(phase=Phase.IDLE, app_version="2.0.0", pods={})
    patch = after.to_patch(before)
    assert patch["phase"] == "Idle" and patch["currentPod"] is None and patch["stalledReason"] is None
    assert patch["pods"] == {name: None for name in before.pods}
    merged = _merge(_status("kdrollout-gating-v0.json"), patch)
    assert RolloutStatus.from_obj(merged) == after


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """RFC 7386 JSON merge patch (what the API server applies to the status subresource)."""
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = _merge(out.get(key) if isinstance(out.get(key), dict) else {}, value)
        else:
            out[key] = value
    return out
