"""Outcome: what executing one action did (value object returned by Executor.execute)."""

from __future__ import annotations

from dataclasses import dataclass

from gitops_kd.observe.collector import Expectation


@dataclass(frozen=True)
class Outcome:
    """The result of one action.

    ``changed`` is False when the effect was already there (idempotent no-op); ``failed`` when the
    action could not do its job (the rollout is then Stalled or the action retried); ``requeue_after``
    asks the runtime to look again after that many seconds; ``expect`` lists the writes the
    runtime's cache must show before re-planning (read-your-writes).
    """

    description: str
    changed: bool
    message: str = ""
    failed: bool = False
    requeue_after: float | None = None
    expect: tuple[Expectation, ...] = ()
