"""The answer of a replica that cannot judge a request: the API server's own, had the webhook been unreachable.

That is the failurePolicy of the webhook the request came through (its rules matching the request's resource
and operation), read from the ValidatingWebhookConfiguration: Ignore lets the edit through (with a warning),
Fail refuses it. Unset means Fail, admissionregistration.k8s.io/v1's default. When the configuration cannot be
read, IGNORE (what deploy/optional/admission ships); when several of its webhooks match, Fail wins, as the API
server refuses a request any one of them fails (and so for a request no rule covers: any webhook's Fail). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

IGNORE, FAIL = "Ignore", "Fail"
UNREAD = IGNORE  # the configuration could not be read: the policy deploy/optional/admission ships


@dataclass(frozen=True)
class Hook:
    """One webhook of the configuration that calls our Service: its failurePolicy and rules."""

    failure_policy: str
    rules: tuple[Mapping[str, Any], ...]

    def matches(self, request: Mapping[str, Any]) -> bool:
        """True when one of the rules covers the request's resource, group and operation (versions aside:
        matchPolicy Equivalent sends every version)."""
        resource = request.get("resource") or {}
        group, plural = str(resource.get("group", "")), str(resource.get("resource", ""))
        operation = str(request.get("operation", ""))
        return any(
            _has(rule.get("apiGroups"), group) and _has(rule.get("resources"), plural) and _has(rule.get("operations"), operation)
            for rule in self.rules
        )


def _has(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def hooks_of(vwc: Mapping[str, Any] | None, service: str, namespace: str) -> tuple[Hook, ...] | None:
    """The webhooks of ``vwc`` that call Service ``namespace/service`` (None: the configuration is unknown)."""
    if vwc is None:
        return None
    found = []
    for hook in vwc.get("webhooks") or []:
        svc = (hook.get("clientConfig") or {}).get("service") or {}
        if (svc.get("name"), svc.get("namespace")) == (service, namespace):
            found.append(Hook(str(hook.get("failurePolicy") or FAIL), tuple(hook.get("rules") or ())))
    return tuple(found)


def failure_policy(hooks: Sequence[Hook] | None, request: Mapping[str, Any]) -> str:
    """IGNORE or FAIL: what the API server does with ``request`` when the webhook does not answer."""
    if not hooks:
        return UNREAD
    matched = [h.failure_policy for h in hooks if h.matches(request)] or [h.failure_policy for h in hooks]
    return FAIL if FAIL in matched else IGNORE
