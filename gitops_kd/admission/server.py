"""POST /admission: the validating webhook (AdmissionReview admission.k8s.io/v1) and its audit trail.

The verdict is gitops_kd.drift.admit's, on the desired state of the revision the cluster records as applied
(admission/applied.py: the same on every replica) and the observed state of the watch caches. A request that
needs them while this replica cannot judge (the revision not loaded yet, the caches not synced) gets the answer
the API server would give if the webhook were unreachable (admission/policy.py: allowed with a warning under
failurePolicy Ignore, refused with the reason under Fail); a break-glass still passes, audited. Denials,
break-glass edits and unjudged requests are counted (gitops_kd_admission_requests_total) and logged; denials
and break-glass edits are recorded as Warning Events on the object (EditDenied, BreakGlassEdit), written off
the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from gitops_kd.admission.applied import Applied
from gitops_kd.admission.policy import FAIL, Hook, failure_policy
from gitops_kd.constants import BREAK_GLASS_ANNOTATION
from gitops_kd.drift.admit import Identities, Verdict, break_glass, decide, exempt, trusted
from gitops_kd.drift.rules import IgnoreRules
from gitops_kd.observed import ObservedState
from kubeplumb.names import WARNING

log = logging.getLogger(__name__)
PATH = "/admission"
REVIEW = ("admission.k8s.io/v1", "AdmissionReview")
DENIED_REASON, BREAK_GLASS_REASON = "EditDenied", "BreakGlassEdit"
# the metric's results: besides allowed, denied and break-glass, a request of gitops-kd's or KubeDirector's
# users (exempt) and one answered by the failure policy (not-judged)
EXEMPT, NOT_JUDGED = "exempt", "not-judged"
NOTHING_APPLIED = "gitops-kd has applied no Git revision yet: nothing is guarded"


class AdmissionHandler:
    """Answers reviews from `applied()` (the recorded revision's desired state) and `observed()` (None until the
    caches are synced); `hooks` are the configuration's webhooks (None: not read), for the failure policy."""

    def __init__(
        self,
        applied: Callable[[], Applied],
        observed: Callable[[], ObservedState | None],
        who: Identities,
        *,
        rules: IgnoreRules | None = None,
        metrics: Any = None,
        record_event: Callable[[dict[str, Any], str, str], None] | None = None,
    ) -> None:
        self.applied, self.observed, self.who, self.rules = applied, observed, who, rules
        self.metrics, self.record_event = metrics, record_event
        self.hooks: tuple[Hook, ...] | None = None

    async def handle(self, request: web.Request) -> web.Response:
        try:
            review = await request.json()
        except ValueError:
            return web.json_response({"error": "body is not JSON"}, status=400)
        if (
            not isinstance(review, dict)
            or (review.get("apiVersion"), review.get("kind")) != REVIEW
            or not isinstance(review.get("request"), dict)
        ):
            return web.json_response({"error": "expected an AdmissionReview admission.k8s.io/v1 with a request"}, status=400)
        req = review["request"]
        verdict, warnings, result = self.judge(req)
        response: dict[str, Any] = {"uid": req.get("uid"), "allowed": verdict.allowed}
        if not verdict.allowed:
            response["status"] = {"code": 403, "reason": "Forbidden", "message": verdict.message}
        elif result == "break-glass":
            warnings.append(
                f"gitops-kd break-glass ({verdict.break_glass}): {', '.join(verdict.fields)} changed by "
                "hand; audited. Drift revert still applies unless the object's drift policy is "
                "alert-only: change Git to keep it."
            )
        if warnings:
            response["warnings"] = warnings
        if not req.get("dryRun"):
            await asyncio.get_running_loop().run_in_executor(None, self._audit, req, verdict, result)
        return web.json_response({"apiVersion": REVIEW[0], "kind": REVIEW[1], "response": response})

    def judge(self, req: dict[str, Any]) -> tuple[Verdict, list[str], str]:
        """The verdict on one request, the warnings to return with it, and the metric's result."""
        if exempt(req, self.who):
            return Verdict(True), [], EXEMPT if trusted(req, self.who) else "allowed"
        applied = self.applied()
        observed = self.observed() if applied.desired is not None else None
        if applied.desired is None and not applied.unknown:
            return Verdict(True), [NOTHING_APPLIED], "allowed"
        if applied.desired is None or observed is None:
            return self._unjudged(req, applied.unknown or "the watch caches are not synced yet")
        verdict = decide(req, applied.desired, observed, self.who, self.rules)
        return verdict, [], "denied" if not verdict.allowed else "break-glass" if verdict.break_glass else "allowed"

    def _unjudged(self, req: dict[str, Any], why: str) -> tuple[Verdict, list[str], str]:
        """What the API server would answer were the webhook unreachable; a break-glass passes (audited)."""
        kind = str((req.get("kind") or {}).get("kind", ""))
        namespace, name = str(req.get("namespace") or ""), str(req.get("name") or "")
        glass = break_glass(req, self.who)
        if glass:
            return Verdict(True, kind, namespace, name, (f"not judged ({why})",), "", glass), [], "break-glass"
        if failure_policy(self.hooks, req) == FAIL:
            return (
                Verdict(
                    False,
                    kind,
                    namespace,
                    name,
                    message=(
                        f"gitops-kd cannot judge this edit of {kind} {namespace}/{name} now: {why}. The webhook's "
                        "failurePolicy is Fail, so it is refused as if gitops-kd were unreachable; retry in a moment, or "
                        f'break-glass (audited): set the annotation {BREAK_GLASS_ANNOTATION}="<reason>" in this edit'
                    ),
                ),
                [],
                NOT_JUDGED,
            )
        return (
            Verdict(True, kind, namespace, name),
            [
                f"gitops-kd did not check this edit: {why}. Allowed, as the webhook's failurePolicy Ignore would if "
                "gitops-kd were unreachable; drift revert still applies"
            ],
            NOT_JUDGED,
        )

    def _audit(self, req: dict[str, Any], verdict: Verdict, result: str) -> None:
        kind = str((req.get("kind") or {}).get("kind", ""))
        user = str((req.get("userInfo") or {}).get("username", ""))
        if self.metrics is not None:
            self.metrics.admission_total.labels(kind=kind, result=result).inc()
        if result == NOT_JUDGED:
            log.warning(
                "admission: %s %s/%s: %s by %s not judged, %s: %s",
                kind,
                verdict.namespace,
                verdict.name,
                req.get("operation"),
                user,
                "allowed" if verdict.allowed else "refused",
                verdict.message or "failurePolicy Ignore",
            )
            return
        if result in ("allowed", EXEMPT):
            return
        obj = req.get("oldObject") or req.get("object") or {}
        if result == "denied":
            message = f"{req.get('operation')} by {user} denied: {', '.join(verdict.fields)}"
            log.warning("admission: %s %s/%s: %s", kind, verdict.namespace, verdict.name, message)
            reason = DENIED_REASON
        else:
            message = (
                f"{req.get('operation')} by {user} allowed by break-glass ({verdict.break_glass}): {', '.join(verdict.fields)}"
            )
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
