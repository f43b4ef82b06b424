"""Which webhooks of a ValidatingWebhookConfiguration a request reaches: v1 defaults, rules, scope, selectors."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, cast

from kdsim import selectors


@dataclass(frozen=True)
class Request:
    """The admission attributes the matching needs (kube-apiserver's admission.Attributes, reduced)."""

    operation: str  # CREATE, UPDATE, DELETE, CONNECT
    group: str
    version: str
    resource: str
    subresource: str
    namespaced: bool
    namespace: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    namespace_labels: dict[str, str] = field(default_factory=dict)


def defaulted(webhook: dict[str, Any]) -> dict[str, Any]:
    """A webhook entry with admissionregistration/v1 SetDefaults_* applied (the stored object is not changed)."""
    w = copy.deepcopy(webhook)
    w.setdefault("failurePolicy", "Fail")
    w.setdefault("matchPolicy", "Equivalent")
    w.setdefault("namespaceSelector", {})
    w.setdefault("objectSelector", {})
    w.setdefault("timeoutSeconds", 10)
    for rule in w.get("rules") or []:
        rule.setdefault("scope", "*")
    service = (w.get("clientConfig") or {}).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)
    return w


def _has(values: list[str] | None, value: str) -> bool:
    return bool(values) and ("*" in values or value in values)  # type: ignore[operator]


def _resource_matches(patterns: list[str], resource: str, subresource: str) -> bool:
    """rules.resources: "pods", "pods/status", "*" (no subresource), "*/scale", "pods/*", "*/*" (RuleMatcher)."""
    for pattern in patterns:
        res, _, sub = pattern.partition("/")
        if res in ("*", resource) and sub in ("*", subresource):
            return True
    return False


def rule_matches(rule: dict[str, Any], req: Request, version: str | None = None) -> bool:
    """One RuleWithOperations against the request (at `version` when matching an equivalent version)."""
    if not _has(rule.get("operations"), req.operation):
        return False
    if not _has(rule.get("apiGroups"), req.group) or not _has(rule.get("apiVersions"), version or req.version):
        return False
    if not _resource_matches(list(rule.get("resources") or []), req.resource, req.subresource):
        return False
    scope = rule.get("scope", "*")
    return cast(bool, scope == "*" or (scope == "Namespaced") == req.namespaced)


def rules_match(webhook: dict[str, Any], req: Request, other_versions: list[str]) -> str | None:
    """The version the request is sent as when some rule matches (its own, or under matchPolicy Equivalent
    another served version of the same resource), else None."""
    rules = webhook.get("rules") or []
    if any(rule_matches(r, req) for r in rules):
        return req.version
    if webhook.get("matchPolicy", "Equivalent") == "Equivalent":
        for version in other_versions:
            if any(rule_matches(r, req, version) for r in rules):
                return version
    return None


def _labels(obj: dict[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if not selector:
        return True
    return bool(selectors.label_selector_from_dict(selector).matches(labels))


def selectors_match(webhook: dict[str, Any], req: Request) -> bool:
    """namespaceSelector (the namespace's labels; a Namespace object's own labels; other cluster-scoped objects
    always pass) and objectSelector (the new or the old object's labels, either one)."""
    ns_selector = webhook.get("namespaceSelector")
    if req.group == "" and req.resource == "namespaces":
        if not _selects(ns_selector, _labels(req.obj or req.old)):
            return False
    elif req.namespaced and not _selects(ns_selector, req.namespace_labels):
        return False
    obj_selector = webhook.get("objectSelector")
    if not obj_selector:
        return True
    return any(o is not None and _selects(obj_selector, _labels(o)) for o in (req.obj, req.old))
