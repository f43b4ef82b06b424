"""The result of planning: Plan, the ordered actions or the refusals (a diff.model.Refusal each) (pure value)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitops_kd.diff.model import Refusal

if TYPE_CHECKING:
    from gitops_kd.plan.actions import Action


IN_SYNC = "in sync: nothing to do"  # a plan without actions or refusals


@dataclass(frozen=True)
class Plan:
    """The ordered actions (the first one is executed now) and the refusals.

    With any refusal the commit is refused as a whole: nothing of it is written, and the only actions are the
    Stalls of rollouts that say Ready while their pods run another version (plan/truth.py). ``kept`` notes
    objects left alone: applied by gitops-kd but no longer in Git with prune off (plan/prune.py), in Git but
    outside the controller's namespaces (controller/scope.py), or a KDApp stock KubeDirector holds while clusters
    use it (plan/held.py); notes do not make a plan non-empty.
    """

    actions: tuple[Action, ...] = ()
    refusals: tuple[Refusal, ...] = ()
    kept: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "actions", tuple(self.actions))
        object.__setattr__(self, "refusals", tuple(self.refusals))
        object.__setattr__(self, "kept", tuple(self.kept))

    @property
    def empty(self) -> bool:
        """True in steady state: no action and no refusal."""
        return not self.actions and not self.refusals

    @property
    def refused(self) -> bool:
        return bool(self.refusals)

    def next(self) -> Action | None:
        """The action to execute now, or None."""
        return self.actions[0] if self.actions else None

    def for_cluster(self, namespace: str, name: str) -> tuple[Action, ...]:
        """The actions of one cluster, in plan order."""
        return tuple(a for a in self.actions if a.cluster_key == (namespace, name))

    def describe(self, details: Callable[[Action], Iterable[str]] | None = None) -> str:
        """Human text: refusals first, then numbered actions, each followed by its ``details`` lines (indented);
        "in sync" when empty."""
        if self.refusals:
            return "\n".join(
                [f"refused ({len(self.refusals)} forbidden change(s)); nothing will be applied:"]
                + [f"  - {r.describe()}" for r in self.refusals]
                + [f"  then: {a.describe()}" for a in self.actions]
            )
        lines: list[str] = []
        for i, a in enumerate(self.actions, 1):
            lines.append(f"{i}. {a.describe()}")
            lines += [f"     {line}" for line in (details(a) if details is not None else ())]
        return "\n".join((lines or [IN_SYNC]) + [f"  note: {k}" for k in self.kept])
