"""ApplyApp / ApplyCluster / Prune: create or update a KDApp / KDCluster from Git (skipping when already there),
or delete one Git no longer has. A write the API server refuses (validation, an admission webhook such as
KubeDirector's, RBAC) or fails is a failed Outcome with a Warning Event naming the server's message, retried
later; an apply's failures in a row are counted in the KDRollouts concerned and stall them when they repeat."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from gitops_kd.constants import (
    FAILURE_RETRY_CAP,
    OWNED_PREFIX,  # labels/annotations gitops-kd owns follow Git exactly; others are kept
    STALL_AFTER_FAILURES,
    StallReason,
)
from gitops_kd.diff.engine import spec_digest
from gitops_kd.execute import apply_failures as failures
from gitops_kd.execute import server_kept, storage_class
from gitops_kd.execute.context import ExecContext, rv
from gitops_kd.execute.outcome import Outcome
from gitops_kd.execute.repeat import retry_after
from gitops_kd.kd.layout import API_VERSION, KDAPP_KIND, KDAPP_PLURAL, KDCLUSTER_KIND, KDCLUSTER_PLURAL
from gitops_kd.kd.normalize import stored_spec, with_kd_filled
from gitops_kd.observe.collector import Expectation
from gitops_kd.plan.actions import ApplyApp, ApplyCluster, Prune
from gitops_kd.status import events as ev
from kubeplumb.names import WARNING
from kubeplumb.rest import message_of

log = logging.getLogger(__name__)
REFUSED = (400, 403, 422)  # the server (or an admission webhook) said no: retrying at once will not help
RACES = (404, 409)  # the object went or changed meanwhile: the runtime re-plans and retries at once
REFUSED_RETRY_SECONDS = FAILURE_RETRY_CAP
WEBHOOK_HINT = (
    "KubeDirector's admission webhook refuses spec changes to a KubeDirectorApp that clusters use; "
    "gitops-kd writes none its clusters use, so a cluster it does not watch must use this one "
    "(docs/design/stock-kubedirector.md)"
)


def _apply(
    ctx: ExecContext, plural: str, namespace: str, name: str, body: dict[str, Any], description: str, force_create: bool = False
) -> tuple[Outcome, dict[str, Any] | None]:
    """Create, or replace spec + gitops-kd's labels/annotations (a no-op when the live object has them)."""
    meta = body.setdefault("metadata", {})
    meta["namespace"], meta["name"] = namespace, name
    live = None if force_create else ctx.rest.get_or_none(API_VERSION, plural, namespace, name)
    if live is None and force_create:
        live = ctx.rest.get_or_none(API_VERSION, plural, namespace, name)
    if live is None:
        created = ctx.rest.create(API_VERSION, plural, namespace, body)
        return (
            Outcome(
                description,
                True,
                f"created {plural} {namespace}/{name}",
                expect=(Expectation(plural, namespace, name, rv(created)),),
            ),
            created,
        )
    new_meta = dict(live.get("metadata") or {})
    for key in ("labels", "annotations"):
        merged = {k: v for k, v in (new_meta.get(key) or {}).items() if not k.startswith(OWNED_PREFIX)}
        merged.update(meta.get(key) or {})
        new_meta[key] = merged
    live_meta = live.get("metadata") or {}
    live_spec = live.get("spec")
    if body.get("kind") == KDCLUSTER_KIND and isinstance(live_spec, dict):  # KD judges the request unmutated
        body = {**body, "spec": with_kd_filled(body.get("spec") or {}, live_spec)}
    if (
        live_spec in (body.get("spec"), stored_spec(str(body.get("kind", "")), body.get("spec") or {}))
        and (live_meta.get("labels") or {}) == new_meta["labels"]
        and (live_meta.get("annotations") or {}) == new_meta["annotations"]
    ):
        return Outcome(description, False, f"{plural} {namespace}/{name} already up to date"), None
    new = dict(body)
    new["metadata"] = new_meta
    if "status" in live:
        new["status"] = live["status"]
    updated = ctx.rest.replace(API_VERSION, plural, namespace, name, new)
    if rv(updated) == rv(live):  # the server (after KubeDirector's webhook) stored nothing new: a no-op
        return Outcome(description, False, f"{plural} {namespace}/{name} unchanged by the server"), updated
    return (
        Outcome(
            description, True, f"updated {plural} {namespace}/{name}", expect=(Expectation(plural, namespace, name, rv(updated)),)
        ),
        updated,
    )


def refusable(
    ctx: ExecContext, kind: str, namespace: str, name: str, description: str, reason: str, call: Callable[[], Outcome]
) -> Outcome:
    """``call()``; a refusal by the server (400/403/422) becomes a Warning Event and a failed, held Outcome."""
    try:
        return call()
    except ApiException as exc:
        if exc.status not in REFUSED:
            raise
        said = _say(kind, exc.status, message_of(exc) or str(exc.reason or f"HTTP {exc.status}"))
        ctx.events.record_ref(API_VERSION, kind, namespace, name, reason, said, type_=WARNING)
        log.error("%s: %s", description, said)
        return Outcome(description, False, said, failed=True, requeue_after=REFUSED_RETRY_SECONDS)


def _say(kind: str, code: int, message: str) -> str:
    """What the Warning Event (and the stall) says of a write the server refused (4xx) or failed (5xx, timeout)."""
    hint = f" ({WEBHOOK_HINT})" if kind == KDAPP_KIND and "admission webhook" in message else ""
    verb = "refused" if failures.refused(code) else "failed"
    return f"the API server {verb} the change ({code or 'timeout'}): {message}{hint}"


def _counted(
    ctx: ExecContext,
    kind: str,
    namespace: str,
    name: str,
    description: str,
    manifest: Any,
    rollouts: tuple[tuple[str, str], ...],
    counted: tuple[tuple[str, str], ...],
    call: Callable[[], Outcome],
    exists: bool = True,
) -> Outcome:
    """``call()``, its failures in a row counted in the KDRollouts of ``rollouts`` (apply_failures.py): a 4xx (but
    404 and 409, races the runtime retries at once), a 5xx or a timeout is a Warning Event and a failed Outcome
    retried with backoff; the STALL_AFTER_FAILURES-th in a row stalls those rollouts. A success drops the count
    from those of ``counted`` (the ones the planner saw counting: no read of the others)."""
    digest = spec_digest(manifest)
    write = failures.Write(kind, namespace, name, digest, description)
    error: Exception
    try:
        outcome = call()
    except ApiException as exc:
        if exc.status in RACES or not exc.status:
            raise
        code, message, error = int(exc.status), message_of(exc) or str(exc.reason or f"HTTP {exc.status}"), exc
    except urllib3.exceptions.TimeoutError as exc:
        code, message, error = 0, f"no answer within the client's timeout ({exc})", exc
    else:
        expect = failures.succeeded(ctx, write, counted)
        return replace(outcome, expect=outcome.expect + expect) if expect else outcome
    said = _say(kind, code, message)
    if exists:  # an object not created yet gets no Event: the GitOpsKDSource's says it (controller/refused_writes.py)
        ctx.events.record_ref(API_VERSION, kind, namespace, name, StallReason.APPLY_FAILED, said, type_=WARNING)
    log.error("%s: %s", description, said)
    in_row, expect = failures.failed(ctx, write, rollouts, code, message, said)
    short = f"{'refused by' if failures.refused(code) else 'failed at'} the API server ({code or 'timeout'}): {message}"
    if not in_row:  # no KDRollout keeps the count (a KDCluster being created, a KDApp no cluster uses yet)
        if code not in REFUSED:
            raise error
        return Outcome(description, False, short, failed=True, requeue_after=REFUSED_RETRY_SECONDS)
    return Outcome(
        description,
        False,
        f"{short} ({in_row}/{STALL_AFTER_FAILURES} in a row)",
        failed=True,
        requeue_after=retry_after(in_row),
        expect=expect,
    )


def apply_app(ctx: ExecContext, action: ApplyApp) -> Outcome:
    return _counted(
        ctx,
        KDAPP_KIND,
        action.namespace,
        action.name,
        action.describe(),
        action.body,
        action.users,
        action.counted,
        lambda: _apply_app(ctx, action),
    )


def apply_cluster(ctx: ExecContext, action: ApplyCluster) -> Outcome:
    cluster = ((action.namespace, action.name),)
    return _counted(
        ctx,
        KDCLUSTER_KIND,
        action.namespace,
        action.name,
        action.describe(),
        action.body,
        cluster,
        cluster if action.counted else (),
        lambda: _apply_cluster(ctx, action),
        exists=not action.create,
    )


def prune(ctx: ExecContext, action: Prune) -> Outcome:
    return refusable(
        ctx, action.kind, action.namespace, action.name, action.describe(), ev.PRUNE_FAILED, lambda: _prune(ctx, action)
    )


def _kept(ctx: ExecContext, plural: str, outcome: Outcome, obj: dict[str, Any] | None, manifest: dict[str, Any]) -> Outcome:
    """server_kept's mark after the write; the reconcile then waits to read the mark, not only the write."""
    said, marked = server_kept.mark(ctx, plural, obj, manifest)
    if marked is None:
        return replace(outcome, message=outcome.message + said)
    meta = marked.get("metadata") or {}
    seen = Expectation(plural, str(meta.get("namespace", "")), str(meta.get("name", "")), rv(marked))
    return replace(outcome, message=outcome.message + said, expect=outcome.expect + (seen,))


def _apply_app(ctx: ExecContext, action: ApplyApp) -> Outcome:
    outcome, obj = _apply(ctx, KDAPP_PLURAL, action.namespace, action.name, action.body, action.describe())
    outcome = _kept(ctx, KDAPP_PLURAL, outcome, obj, action.body)
    if obj is not None and outcome.changed:
        ctx.events.record(
            obj,
            ev.APPLIED,
            f"KubeDirectorApp {action.name} applied" + (f" at version {action.version}" if action.version else ""),
        )
    return outcome


def _apply_cluster(ctx: ExecContext, action: ApplyCluster) -> Outcome:
    if ctx.rest.get_or_none(API_VERSION, KDCLUSTER_PLURAL, action.namespace, action.name) is None:
        reason = storage_class.refusal(ctx, action.body)
        if reason is not None:  # KubeDirector would refuse the create: say why, write nothing (the Event goes on
            # the GitOpsKDSource, an object that exists: controller/refused_writes.py)
            said = f"not created: KubeDirector would refuse it: {reason}"
            log.error("%s: %s", action.describe(), said)
            return Outcome(action.describe(), False, said, failed=True, requeue_after=REFUSED_RETRY_SECONDS)
    outcome, obj = _apply(ctx, KDCLUSTER_PLURAL, action.namespace, action.name, action.body, action.describe())
    outcome = _kept(ctx, KDCLUSTER_PLURAL, outcome, obj, action.body)
    if obj is not None and outcome.changed:
        ctx.events.record(obj, ev.APPLIED, outcome.message)
    return outcome


def _prune(ctx: ExecContext, action: Prune) -> Outcome:
    """Delete with a uid precondition (background propagation: KubeDirector and the garbage collector remove
    what the object owns); 404 (gone) and 409 (another object of that name now) count as done."""
    plural = KDCLUSTER_PLURAL if action.kind == KDCLUSTER_KIND else KDAPP_PLURAL
    gone = (Expectation(plural, action.namespace, action.name, gone_uid=action.uid),)
    live = ctx.rest.get_or_none(API_VERSION, plural, action.namespace, action.name)
    if live is None or (live.get("metadata") or {}).get("uid") != action.uid:
        return Outcome(action.describe(), False, "already gone", expect=gone)
    try:
        answer = ctx.rest.delete(
            API_VERSION, plural, action.namespace, action.name, uid=action.uid, propagation_policy="Background"
        )
    except ApiException as exc:
        if exc.status in (404, 409):
            return Outcome(action.describe(), False, f"already gone ({exc.status})", expect=gone)
        raise
    if answer.get("kind") == live.get("kind") and rv(answer):  # finalizers: deleting, not gone yet
        gone = (Expectation(plural, action.namespace, action.name, rv(answer)),)
    ctx.events.record(
        live, ev.PRUNED, f"{action.kind} {action.name} deleted: gitops-kd applied it and it is no longer in Git (--prune)"
    )
    log.info("pruned %s %s/%s", action.kind, action.namespace, action.name)
    return Outcome(action.describe(), True, "deleted", expect=gone)
