"""gitops_kd/kd/app_switch.py, the controller's model of the live-app-upgrade branch's switch rules, answers each
case the embedded branch and the real branch answer alike (tests/sim/kubedirector/switch_cases.py), word for word."""

from __future__ import annotations

from typing import Any

import pytest

from gitops_kd.kd import app_switch
from gitops_kd.kd.layout import KDAPP_KIND
from gitops_kd.kd.normalize import stored_spec
from tests.sim.kubedirector.switch_cases import NOT_UPGRADABLE, REFUSED_SWITCHES, candidate, hello

STATUS = {
    "state": "configured",
    "roles": [{"id": "controller", "members": [{"pod": "c-0"}]}, {"id": "worker", "members": [{"pod": "w-0"}, {"pod": "w-1"}]}],
}


def _answer(
    target: dict[str, Any], *, upgradable: bool | None = True, may_mark: bool = False, status: dict[str, Any] = STATUS
) -> list[str]:
    running = stored_spec(KDAPP_KIND, hello()["spec"])
    if upgradable is not None:
        running["upgradable"] = upgradable
    return app_switch.switch_errors(
        status,
        running,
        stored_spec(KDAPP_KIND, target["spec"]),
        running_name="hello",
        target_name=target["metadata"]["name"],
        may_mark=may_mark,
    )


@pytest.mark.parametrize("case", sorted(REFUSED_SWITCHES))
def test_each_refusal_is_kubedirectors_message(case: str) -> None:
    target, message = REFUSED_SWITCHES[case]
    assert "\n".join(_answer(target)) == message


def test_an_image_and_version_change_is_admitted_and_upgradable_is_needed() -> None:
    assert _answer(candidate("hello-v2")) == []
    assert _answer(candidate("hello-v2"), upgradable=None) == [NOT_UPGRADABLE]
    assert _answer(candidate("hello-v2"), upgradable=None, may_mark=True) == []  # gitops-kd marks it first
    assert _answer(candidate("hello-v2"), upgradable=False, may_mark=True) == [NOT_UPGRADABLE]


def test_going_back_to_prevapp_is_the_rollback_and_other_switches_wait() -> None:
    upgrading = {**STATUS, "state": "updating", "upgradeInfo": {"isRollingBack": False, "prevApp": "hello-old"}}
    older = candidate("hello-old", version="0.9.0")
    assert app_switch.rollback(upgrading, "hello-old") and _answer(older, status=upgrading) == []
    assert app_switch.busy(upgrading, "hello-v3") and not app_switch.busy(upgrading, "hello-old")
    assert not app_switch.busy(STATUS, "hello-v3")
