"""failure_policy(): a replica that cannot judge answers with the failurePolicy of the webhook the request came
through, read from deploy/optional/admission's own ValidatingWebhookConfiguration (pure)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from gitops_kd.admission.policy import FAIL, IGNORE, UNREAD, failure_policy, hooks_of

VWC = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "deploy/optional/admission/validatingwebhookconfiguration.yaml").read_text()
)
SVC, NS = "gitops-kd-admission", "gitops-kd-system"


def _request(group: str, resource: str, operation: str = "UPDATE") -> dict[str, Any]:
    return {"resource": {"group": group, "version": "v1", "resource": resource}, "operation": operation}


def _with(workloads: str | None, specs: str | None) -> dict[str, Any]:
    vwc = copy.deepcopy(VWC)
    for hook, policy in zip(vwc["webhooks"], (workloads, specs), strict=True):
        if policy is None:
            hook.pop("failurePolicy")
        else:
            hook["failurePolicy"] = policy
    return vwc


STS = _request("apps", "statefulsets")
KDAPP_DELETE = _request("kubedirector.hpe.com", "kubedirectorapps", "DELETE")


def test_the_shipped_configuration_ignores() -> None:
    hooks = hooks_of(VWC, SVC, NS)
    assert failure_policy(hooks, STS) == failure_policy(hooks, KDAPP_DELETE) == IGNORE


def test_each_request_gets_the_policy_of_the_webhook_whose_rules_match_it() -> None:
    hooks = hooks_of(_with("Fail", "Ignore"), SVC, NS)
    assert failure_policy(hooks, STS) == FAIL
    assert failure_policy(hooks, _request("", "services")) == FAIL
    assert failure_policy(hooks, KDAPP_DELETE) == IGNORE
    hooks = hooks_of(_with("Ignore", "Fail"), SVC, NS)
    assert (failure_policy(hooks, STS), failure_policy(hooks, KDAPP_DELETE)) == (IGNORE, FAIL)


def test_an_unset_policy_is_fail_as_in_admissionregistration_v1() -> None:
    assert failure_policy(hooks_of(_with(None, "Ignore"), SVC, NS), STS) == FAIL


def test_webhooks_of_another_service_do_not_count_and_an_unread_configuration_is_the_shipped_policy() -> None:
    assert hooks_of(_with("Fail", "Fail"), "someone-else", NS) == ()
    assert failure_policy(hooks_of(_with("Fail", "Fail"), "someone-else", NS), STS) == UNREAD
    assert failure_policy(hooks_of(None, SVC, NS), STS) == UNREAD == IGNORE


def test_a_request_no_rule_names_takes_fail_if_any_webhook_fails() -> None:
    hooks = hooks_of(_with("Ignore", "Fail"), SVC, NS)
    assert failure_policy(hooks, _request("", "configmaps")) == FAIL
