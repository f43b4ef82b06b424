"""API errors of the embedded API server, rendered as metav1.Status bodies worded like kube-apiserver's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One metav1.StatusCause: a field-level reason inside an Invalid error."""

    reason: str  # e.g. "FieldValueForbidden", "FieldValueRequired", "FieldValueInvalid"
    message: str  # e.g. "Forbidden: updates to statefulset spec ... are forbidden"
    field: str  # e.g. "spec"

    def to_dict(self) -> dict[str, str]:
        """The cause as JSON; like the real server, an empty field is left out."""
        body = {"reason": self.reason, "message": self.message}
        if self.field:
            body["field"] = self.field
        return body


@dataclass
class ApiError(Exception):
    """An error the API server returns to a client as a metav1.Status with the given code."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    causes: list[Cause] = field(default_factory=list)
    # Warning headers sent with the error (admission webhooks' warnings come back even with a denial).
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def to_status(self) -> dict[str, Any]:
        """The JSON body kube-apiserver sends for this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if not self.reason:  # metav1.Status omits an empty reason (e.g. a webhook denial)
            del body["reason"]
        details = dict(self.details or {})
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if details:
            body["details"] = details
        return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    """StatusDetails; an empty name is left out, as Go's omitempty does."""
    d: dict[str, Any] = {"name": name, "kind": kind} if name else {"kind": kind}
    if group:
        d["group"] = group
    return d


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    """404: `pods "x" not found` / `statefulsets.apps "x" not found`."""
    return ApiError(404, "NotFound", f'{_qualified(resource, group)} "{name}" not found', _details(name, group, resource))


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    """409 AlreadyExists."""
    return ApiError(
        409, "AlreadyExists", f'{_qualified(resource, group)} "{name}" already exists', _details(name, group, resource)
    )


def conflict(
    resource: str,
    name: str,
    group: str = "",
    why: str = "the object has been modified; please apply your changes to the latest version and try again",
) -> ApiError:
    """409 Conflict for a stale resourceVersion (optimistic concurrency)."""
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
        _details(name, group, resource),
    )


def invalid(kind: str, name: str, causes: list[Cause], group: str = "") -> ApiError:
    """422 Invalid: `StatefulSet.apps "web" is invalid: spec: Forbidden: ...`."""
    qualified = f"{kind}.{group}" if group else kind
    parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    if len(parts) == 1:
        summary = parts[0]
    else:
        summary = "[" + ", ".join(parts) + "]"
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {summary}', _details(name, group, kind), list(causes))


def bad_request(message: str) -> ApiError:
    """400 BadRequest."""
    return ApiError(400, "BadRequest", message)


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> ApiError:
    """405 MethodNotAllowed."""
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(
    accepted: tuple[str, ...] = (
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
        "application/strategic-merge-patch+json",
    ),
) -> ApiError:
    """415 UnsupportedMediaType, listing the accepted patch types as the real server does."""
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted),
    )


def gone(message: str) -> ApiError:
    """410 Expired: e.g. `too old resource version: 5 (120)` on a watch or list."""
    return ApiError(410, "Expired", message)


def internal(message: str) -> ApiError:
    """500 InternalError."""
    return ApiError(500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]})


def timeout(
    message: str = "the server was unable to return a response in the time allotted, but may still be processing the request",
) -> ApiError:
    """504 Timeout."""
    return ApiError(504, "Timeout", message)
