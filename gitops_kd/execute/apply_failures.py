"""A KDApp / KDCluster write's failures in a row, counted in KDRollout status.applyFailure (one guarded write each)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from gitops_kd.constants import ROLLOUT_PLURAL, STALL_AFTER_FAILURES, Phase, StallReason
from gitops_kd.execute.context import ExecContext, generation, rv
from gitops_kd.execute.repeat import stall_rollout
from gitops_kd.observe.collector import Expectation
from gitops_kd.rollout.model import RolloutStatus, status_patch
from gitops_kd.status import events as ev
from gitops_kd.status import rollout as rs

log = logging.getLogger(__name__)
MESSAGE_LIMIT = 1000  # characters of the server's message kept in the record
TOO_MANY_REQUESTS = 429


def refused(code: int) -> bool:
    """A 4xx but 429: the server said no (ApplyRefused); a 429, a 5xx or no answer (0) is a failure (ApplyFailed)."""
    return 400 <= code < 500 and code != TOO_MANY_REQUESTS


@dataclass(frozen=True)
class Write:
    """One write of an object from Git: its kind, namespace, name, the digest of its manifest, and what it does."""

    kind: str
    namespace: str
    name: str
    digest: str
    description: str

    def record(self, failures: int, code: int, message: str) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "digest": self.digest,
            "failures": failures,
            "code": code,
            "message": message[:MESSAGE_LIMIT],
        }


def _expect(namespace: str, cluster: str, written: dict[str, Any]) -> Expectation:
    return Expectation(ROLLOUT_PLURAL, namespace, cluster, rv(written))


def failed(
    ctx: ExecContext, write: Write, rollouts: tuple[tuple[str, str], ...], code: int, message: str, said: str
) -> tuple[int, tuple[Expectation, ...]]:
    """Count one more failure of ``write`` in each KDRollout of ``rollouts`` (1 again when the record is another
    write's); the STALL_AFTER_FAILURES-th in a row stalls it, ApplyRefused for a 4xx, else ApplyFailed. Returns
    the most failures in a row counted (0: no KDRollout to count in) and the writes to wait for."""
    most, expect = 0, []
    for namespace, cluster in rollouts:
        obj = ctx.rollout(namespace, cluster)
        if obj is None:
            continue
        status = obj.get("status") or {}
        previous = rs.apply_failure(status)
        same = rs.same_write(previous, write.kind, write.namespace, write.name, write.digest)
        count = previous.failures + 1 if same else 1
        most = max(most, count)
        record = write.record(count, code, message)
        if count >= STALL_AFTER_FAILURES and rs.apply_stalled(status) and same:
            continue  # stalled by this very write already: the status says it all
        phase = RolloutStatus.from_obj(status).phase
        if count >= STALL_AFTER_FAILURES and phase != Phase.STALLED:
            reason = StallReason.APPLY_REFUSED if refused(code) else StallReason.APPLY_FAILED
            text = f"{write.description} failed {count} times in a row; last: {said}"
            written = stall_rollout(
                ctx,
                namespace,
                cluster,
                obj,
                reason,
                text,
                status_patch(apply_failure={**record, "phase": None if phase is None else str(phase)}),
                failed_reason=None,
            )
        else:
            written = ctx.patch_rollout_status(
                namespace, cluster, rs.count_apply_failure(status, record, generation=generation(obj), now=ctx.now()), rv=rv(obj)
            )
        expect.append(_expect(namespace, cluster, written))
    return most, tuple(expect)


def succeeded(ctx: ExecContext, write: Write, rollouts: tuple[tuple[str, str], ...]) -> tuple[Expectation, ...]:
    """``write`` went through: drop its record from each KDRollout of ``rollouts`` and lift its stall."""
    expect = []
    for namespace, cluster in rollouts:
        obj = ctx.rollout(namespace, cluster)
        status = (obj or {}).get("status") or {}
        previous = rs.apply_failure(status)
        if obj is None or not rs.same_object(previous, write.kind, write.namespace, write.name):
            continue
        message = f"{write.description}: succeeded after {previous.failures} failure(s) in a row"
        written = ctx.patch_rollout_status(
            namespace, cluster, rs.lift_apply_stall(status, message, generation=generation(obj), now=ctx.now()), rv=rv(obj)
        )
        if rs.apply_stalled(status):
            ctx.event_on_cluster(namespace, cluster, ev.STALL_LIFTED, message)
        log.info("%s/%s: %s", namespace, cluster, message)
        expect.append(_expect(namespace, cluster, written))
    return tuple(expect)
