"""Self reviews kubectl asks for (`kubectl auth can-i`, `kubectl auth whoami`): answered as kube-apiserver with
AlwaysAllow answers them."""

from __future__ import annotations

import copy
from typing import Any

from kdsim import errors
from kdsim.apiserver.meta import now
from kdsim.apiserver.resources import ResourceType
from kdsim.apiserver.webhooks import UserInfo
from kubeplumb import fielderrors as fe

GROUP, AUTHENTICATION = "authorization.k8s.io", "authentication.k8s.io"
ACCESS, RULES, SELF = "selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"


def is_review(rt: ResourceType) -> bool:
    return (rt.group, rt.plural) in ((GROUP, ACCESS), (GROUP, RULES), (AUTHENTICATION, SELF))


def answer(rt: ResourceType, body: dict[str, Any], user: UserInfo) -> dict[str, Any]:
    """The review with its status filled in (nothing is stored). The embedded server authorizes every
    request (no RBAC), so every access is allowed and the rules are the AlwaysAllow authorizer's wildcards;
    a SelfSubjectReview carries the requester as admission sees it (the token is the user name)."""
    if body.get("kind") not in (None, rt.kind) or body.get("apiVersion") not in (None, rt.api_version):
        raise errors.bad_request(f"the kind in the data ({body.get('kind')}) does not match the expected kind ({rt.kind})")
    out = copy.deepcopy(body)
    out["apiVersion"], out["kind"] = rt.api_version, rt.kind
    out.setdefault("metadata", {})
    out["metadata"].setdefault("creationTimestamp", None)
    if rt.plural == SELF:
        out["metadata"]["creationTimestamp"] = now()
        out["status"] = {"userInfo": user.to_dict()}
        return out
    spec = out.setdefault("spec", {})
    if rt.plural == ACCESS:
        has_resource, has_other = spec.get("resourceAttributes") is not None, spec.get("nonResourceAttributes") is not None
        if has_resource and has_other:
            _refuse(
                rt,
                fe.invalid(
                    "spec.nonResourceAttributes",
                    spec["nonResourceAttributes"],
                    "cannot be specified in combination with resourceAttributes",
                ),
            )
        if not has_resource and not has_other:
            _refuse(
                rt,
                fe.FieldError(
                    "spec.resourceAttributes",
                    fe.INVALID,
                    "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                ),
            )
        out["status"] = {"allowed": True}
    else:
        out["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    return out


def _refuse(rt: ResourceType, err: fe.FieldError) -> None:
    """422 as ValidateSelfSubjectAccessReviewSpec (1.30) words it."""
    raise errors.invalid(rt.kind, "", [errors.Cause(err.reason, err.message, err.path)], GROUP)
