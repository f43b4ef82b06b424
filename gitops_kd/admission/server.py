"""POST /admission: the validating webhook (AdmissionReview admission.k8s.io/v1) and its audit trail.

The verdict is gitops_kd.drift.admit's, on the desired state being reconciled and the observed state of the
watch caches. Denials and break-glass edits are counted (gitops_kd_admission_requests_total), logged and
recorded as Warning Events on the object (EditDenied, BreakGlassEdit); Events are written off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from gitops_kd.drift.admit import Identities, Verdict, decide
from gitops_kd.drift.rules import IgnoreRules
from gitops_kd.observe.model import ObservedState
from gitops_kd.spec.state import DesiredState
from gitops_kd.status.events import WARNING

log = logging.getLogger(__name__)
PATH = "/admission"
REVIEW = ("admission.k8s.io/v1", "AdmissionReview")
DENIED_REASON, BREAK_GLASS_REASON = "EditDenied", "BreakGlassEdit"


class AdmissionHandler:
    """Answers reviews from `desired()` and `observed()` (None while unknown: then every request is allowed,
    with a warning, and drift revert stays the backstop)."""

    def __init__(self, desired: Callable[[], DesiredState | None], observed: Callable[[], ObservedState | None],
                 who: Identities, *, rules: IgnoreRules | None = None, metrics: Any = None,
                 record_event: Callable[[dict[str, Any], str, str], None] | None = None) -> None:
        self.desired, self.observed, self.who, self.rules = desired, observed, who, rules
        self.metrics, self.record_event = metrics, record_event

    async def handle(self, request: web.Request) -> web.Response:
        try:
            review = await request.json()
        except ValueError:
            return web.json_response({"error": "body is not JSON"}, status=400)
        if not isinstance(review, dict) or (review.get("apiVersion"), review.get("kind")) != REVIEW or \
                not isinstance(review.get("request"), dict):
            return web.json_response({"error": "expected an AdmissionReview admission.k8s.io/v1 with a request"},
                                     status=400)
        req = review["request"]
        desired = self.desired()
        warnings: list[str] = []
        if desired is None:
            verdict = Verdict(True)
            warnings.append("gitops-kd has no desired state yet (starting, or not the leader): not checked")
        else:
            verdict = decide(req, desired, self.observed(), self.who, self.rules)
        response: dict[str, Any] = {"uid": req.get("uid"), "allowed": verdict.allowed}
        if not verdict.allowed:
            response["status"] = {"code": 403, "reason": "Forbidden", "message": verdict.message}
        elif verdict.break_glass:
            warnings.append(f"gitops-kd break-glass ({verdict.break_glass}): {', '.join(verdict.fields)} changed by "
                            "hand; audited. Drift revert still applies unless the object's drift policy is "
                            "alert-only: change Git to keep it.")
        if warnings:
            response["warnings"] = warnings
        if not req.get("dryRun"):
            await asyncio.get_running_loop().run_in_executor(None, self._audit, req, verdict)
        return web.json_response({"apiVersion": REVIEW[0], "kind": REVIEW[1], "response": response})

    def _audit(self, req: dict[str, Any], verdict: Verdict) -> None:
        kind = str((req.get("kind") or {}).get("kind", ""))
        user = str((req.get("userInfo") or {}).get("username", ""))
        result = "denied" if not verdict.allowed else "break-glass" if verdict.break_glass else "allowed"
        if self.metrics is not None:
            self.metrics.admission_total.labels(kind=kind, result=result).inc()
        if result == "allowed":
            return
        obj = req.get("oldObject") or req.get("object") or {}
        if result == "denied":
            message = f"{req.get('operation')} by {user} denied: {', '.join(verdict.fields)}"
            log.warning("admission: %s %s/%s: %s", kind, verdict.namespace, verdict.name, message)
            reason = DENIED_REASON
        else:
            message = (f"{req.get('operation')} by {user} allowed by break-glass ({verdict.break_glass}): "
                       f"{', '.join(verdict.fields)}")
            log.warning("admission: %s %s/%s: %s", kind, verdict.namespace, verdict.name, message)
            reason = BREAK_GLASS_REASON
        if self.record_event is not None:
            self.record_event(obj, reason, message)


def make_app(handler: AdmissionHandler) -> web.Application:
    """The webhook's Application: POST /admission, GET /healthz."""
    app = web.Application()
    app.router.add_post(PATH, handler.handle)
    app.router.add_get("/healthz", lambda _r: _ok())
    return app


async def _ok() -> web.Response:
    return web.Response(text="ok\n")


def warning_event(recorder: Any) -> Callable[[dict[str, Any], str, str], None]:
    """record_event for an execute.events.EventRecorder: a Warning Event about the object."""
    return lambda obj, reason, message: recorder.record(obj, reason, message, type_=WARNING)
