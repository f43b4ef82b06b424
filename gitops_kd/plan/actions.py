"""The executor's vocabulary: one frozen dataclass per action, plus Refusal and Plan (pure values).

Each action names the objects it touches, has ``describe()`` (one human line) and ``cluster_key``
((namespace, cluster name) for grouping, None for app-level actions). Manifests, patches and port
lists are deep-frozen; ``.body`` / ``.patch_body`` / ``.ports_body`` give mutable copies to send.

Conventions the executor relies on:
- every action is idempotent on its own (the executor checks its effect is not already there);
- ``RunStep.step_id`` is unique within a rollout (``<target>/<pod>/hook``,
  ``<target>/<pod>/migrate/<dir>``); the executor runs it at most once (marker files, see
  docs/design/live-upgrade.md) and records it in KDRollout status.pods[pod];
- ``Wait`` means: nothing to do for that cluster until it changes or ``requeue_after_seconds`` pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gitops_kd.diff.model import ADOPT, DOWNGRADE, REBUILD, UPGRADE, Refusal
from gitops_kd.kd.layout import KDCLUSTER_KIND
from gitops_kd.plan.result import Plan
from gitops_kd.rollout.model import Unreachable
from gitops_kd.spec.freeze import freeze, thaw
from gitops_kd.spec.upgrade import Gate
from gitops_kd.steps import hook, migrate
from gitops_kd.steps.run_kinds import RUN_KINDS

MIGRATE_STEP, HOOK_STEP = migrate.KIND, hook.KIND  # the run kinds' names (steps/run_kinds.py), for callers


def _key(namespace: str, cluster: str) -> tuple[str, str] | None:
    return (namespace, cluster) if cluster else None


class _ClusterScoped:
    """Mixin of the actions that belong to one KDCluster: ``cluster_key`` from ``namespace`` and ``cluster``."""

    namespace: str
    cluster: str

    @property
    def cluster_key(self) -> tuple[str, str] | None:
        return _key(self.namespace, self.cluster)


@dataclass(frozen=True)
class ApplyApp:
    """Create or update the live KDApp with ``manifest`` (KDApp.cluster_manifest()). ``users``: the clusters
    using it, whose KDRollouts count its failures in a row (and stall when they repeat); ``counted``: those whose
    KDRollout counts failures of it already (status.applyFailure, dropped when the write succeeds)."""

    namespace: str
    name: str
    manifest: Mapping[str, Any] = field(compare=True, repr=False)
    version: str = ""
    users: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)
    counted: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "manifest", freeze(self.manifest))

    @property
    def body(self) -> dict[str, Any]:
        return thaw(self.manifest)  # type: ignore[no-any-return]

    @property
    def cluster_key(self) -> tuple[str, str] | None:
        return None

    def describe(self) -> str:
        what = f" at version {self.version}" if self.version else ""
        return f"apply KubeDirectorApp {self.namespace}/{self.name}{what}"


@dataclass(frozen=True)
class ApplyCluster:
    """Create the KDCluster from ``manifest``, or update the live one's spec to it. ``counted``: its KDRollout
    counts failures of this write already (status.applyFailure, dropped when the write succeeds)."""

    namespace: str
    name: str
    manifest: Mapping[str, Any] = field(compare=True, repr=False)
    create: bool = False
    counted: bool = field(default=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "manifest", freeze(self.manifest))

    @property
    def body(self) -> dict[str, Any]:
        return thaw(self.manifest)  # type: ignore[no-any-return]

    @property
    def cluster_key(self) -> tuple[str, str] | None:
        return (self.namespace, self.name)

    def describe(self) -> str:
        verb = "create" if self.create else "update spec of"
        return f"{verb} KubeDirectorCluster {self.namespace}/{self.name}"


@dataclass(frozen=True)
class EnsureRollout(_ClusterScoped):
    """Create/update the KDRollout ``cluster`` (spec app/targetVersion/commit); status Reconciling.

    ``direction`` is "upgrade" | "downgrade" | "rebuild" (same version, pods on another image) | "adopt"
    (a cluster whose pods already run the target that has no rollout yet: record it as Idle at
    ``target_version``). ``cluster_uid`` is for the owner reference. ``from_stanza`` is the upgrade stanza
    of the version being left (UpgradeSpec.to_annotation() JSON, None if it had none): stored in the
    attempt's status (RolloutStatus.from_stanza) and reported back as ObservedRollout.from_upgrade. EnsureRollout
    is planned BEFORE the KDApp is updated, so the rollout records ``from_version`` while the live app
    still shows it. ``subject`` is the commit's subject line, kept with the attempt for `gitops-kd history`.
    ``deployed`` (adopt only): the KDCluster carries gitops-kd's applied-spec annotation, i.e. gitops-kd created
    it from Git: recording it is its first deploy (event Deployed), not the adoption of a cluster made otherwise.
    ``members_ready`` (adopt only): every member Git asks for exists and is Ready; when False the adoption is
    recorded Reconciling, and Ready only once they are (FinishRollout), else Stalled PodNotReady.
    ``target_stanza``: the target's upgrade stanza (JSON, status.targetStanza): stock KubeDirector holds the KDApp,
    so a later attempt leaving this version reads its stanza here. ``images`` (adopt only): role id -> app image
    of the version (status.images, what the pods are held to while Ready); ``note``: added to the Ready message
    (the KDApp held by KubeDirector, plan/held.py).
    """

    namespace: str
    cluster: str
    app: str
    target_version: str
    from_version: str | None
    commit: str | None
    direction: str
    cluster_uid: str = ""
    from_stanza: str | None = None
    subject: str = ""
    deployed: bool = False
    members_ready: bool = True
    target_stanza: str | None = None
    images: tuple[tuple[str, str], ...] = ()
    note: str = field(default="", compare=False)

    def describe(self) -> str:
        if self.direction == ADOPT:
            verb = "record the first deploy of" if self.deployed else "adopt"
            return f"{verb} KubeDirectorCluster {self.namespace}/{self.cluster} at {self.app} {self.target_version}"
        return (
            f"start {self.direction} of {self.namespace}/{self.cluster}: {self.app} "
            f"{self.from_version or '?'} -> {self.target_version}"
        )


@dataclass(frozen=True)
class SetOnDelete(_ClusterScoped):
    """Set the role StatefulSet's spec.updateStrategy to {type: OnDelete}."""

    namespace: str
    statefulset: str
    role: str
    cluster: str = ""

    def describe(self) -> str:
        return f"set updateStrategy OnDelete on StatefulSet {self.namespace}/{self.statefulset} (role {self.role})"


@dataclass(frozen=True)
class PatchTemplate(_ClusterScoped):
    """Strategic merge patch ``{"spec": {"template": patch}}`` of the role StatefulSet.

    ``patch`` is the body for spec.template only; ``fields`` lists the owned field paths that differ
    (for events; `gitops-kd plan` shows each with its live and Git value, review/livediff.py).
    """

    namespace: str
    statefulset: str
    role: str
    patch: Mapping[str, Any] = field(repr=False)
    cluster: str = ""
    fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "patch", freeze(self.patch))
        object.__setattr__(self, "fields", tuple(self.fields))

    @property
    def patch_body(self) -> dict[str, Any]:
        """The whole strategic merge patch for the StatefulSet: {"spec": {"template": patch}}."""
        return {"spec": {"template": thaw(self.patch)}}

    def describe(self) -> str:
        return f"patch pod template of StatefulSet {self.namespace}/{self.statefulset} (role {self.role})"


@dataclass(frozen=True)
class PatchServicePorts(_ClusterScoped):
    """Replace spec.ports of a member Service with ``ports`` (the full desired list, in order)."""

    namespace: str
    service: str
    ports: tuple[Mapping[str, Any], ...]
    cluster: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "ports", tuple(freeze(p) for p in self.ports))

    @property
    def ports_body(self) -> list[dict[str, Any]]:
        return [thaw(p) for p in self.ports]

    def describe(self) -> str:
        ports = ", ".join(f"{p.get('name')}:{p.get('port')}" for p in self.ports)
        return f"set ports of Service {self.namespace}/{self.service} to [{ports}]"


@dataclass(frozen=True)
class DeletePod(_ClusterScoped):
    """Delete a member pod (precondition uid) so the StatefulSet recreates it at the update revision."""

    namespace: str
    pod: str
    uid: str
    cluster: str = ""
    role: str = ""

    def describe(self) -> str:
        role = f" (role {self.role})" if self.role else ""
        return f"delete pod {self.namespace}/{self.pod}{role} to recreate it at the new revision"


@dataclass(frozen=True)
class RunStep(_ClusterScoped):
    """Run a step of a run kind (steps/run_kinds.py: a migration, the hook) in ``container`` of ``pod``, at most once.

    ``kind`` is "migrate" | "hook"; ``command`` is an argv; ``directory`` is the persisted dir a
    migration is for ("" for hooks).
    """

    namespace: str
    cluster: str
    pod: str
    container: str
    step_id: str
    kind: str
    command: tuple[str, ...]
    timeout_seconds: int
    directory: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "command", tuple(self.command))

    def describe(self) -> str:
        return f"run {RUN_KINDS[self.kind].subject(self.directory)} in pod {self.namespace}/{self.pod} (step {self.step_id})"


@dataclass(frozen=True)
class StartGate(_ClusterScoped):
    """Record in the KDRollout that gating of ``pod`` starts now (RolloutStatus.gate_started_at, current_pod)."""

    namespace: str
    cluster: str
    pod: str

    def describe(self) -> str:
        return f"start upgrade gate for pod {self.namespace}/{self.pod}"


@dataclass(frozen=True)
class CheckGate(_ClusterScoped):
    """Probe the app gate in ``pod`` once; pass → PodProgress.gate_passed, else record the check time."""

    namespace: str
    cluster: str
    pod: str
    role: str
    gate: Gate

    def describe(self) -> str:
        return f"check upgrade gate ({self.gate.probe.how}) in pod {self.namespace}/{self.pod}"


@dataclass(frozen=True)
class FinishRollout(_ClusterScoped):
    """Every pod runs ``version``: status appVersion=version, phase Idle, Ready=True, history entry; ``images``
    (role id -> app image of the version, status.images) is what the pods are held to while Ready; ``note`` is
    added to the Ready message (the KDApp held by KubeDirector, plan/held.py)."""

    namespace: str
    cluster: str
    version: str
    images: tuple[tuple[str, str], ...] = ()
    note: str = field(default="", compare=False)

    def describe(self) -> str:
        return f"finish rollout of {self.namespace}/{self.cluster}: all members at {self.version}"


@dataclass(frozen=True)
class MarkUpgradable(_ClusterScoped):
    """Set spec.upgradable true on KDApp ``app`` (``namespace``), which KubeDirector's live-app-upgrade branch
    requires of the app a cluster leaves by a switch of its spec.app (``cluster``: the one switching)."""

    namespace: str
    app: str
    cluster: str = ""

    def describe(self) -> str:
        return f"mark KubeDirectorApp {self.namespace}/{self.app} upgradable (for {self.cluster}'s switch)"


@dataclass(frozen=True)
class SwitchApp(_ClusterScoped):
    """Switch the KDCluster's spec.app from ``previous`` to ``app`` alone, stamped with Git's manifest digest
    (``digest``): the first write of a native upgrade on KubeDirector's live-app-upgrade branch."""

    namespace: str
    cluster: str
    app: str
    previous: str
    digest: str = ""

    def describe(self) -> str:
        return f"switch KubeDirectorCluster {self.namespace}/{self.cluster} from app {self.previous} to {self.app}"


@dataclass(frozen=True)
class Prune:
    """Delete a KDCluster or KDApp (``kind``) that gitops-kd applied and Git no longer has; the ``uid``
    precondition keeps a re-created object of the same name safe."""

    kind: str
    namespace: str
    name: str
    uid: str

    @property
    def cluster_key(self) -> tuple[str, str] | None:
        return _key(self.namespace, self.name) if self.kind == KDCLUSTER_KIND else None

    def describe(self) -> str:
        return f"prune {self.kind} {self.namespace}/{self.name}: applied by gitops-kd, no longer in Git"


@dataclass(frozen=True)
class MarkMissing(_ClusterScoped):
    """Take Ready away from a KDRollout (Reconciling, reason StatefulSetMissing) while the StatefulSet of
    ``role``, which Git gives members, is absent; FinishRollout makes it Ready again once it is back."""

    namespace: str
    cluster: str
    role: str

    def describe(self) -> str:
        return f"mark {self.namespace}/{self.cluster} not Ready: the StatefulSet of role {self.role} is missing"


@dataclass(frozen=True)
class RestoreLabels(_ClusterScoped):
    """Put back KubeDirector's labels (``labels``: key, value) removed or changed out of band on a role StatefulSet:
    they name its KDCluster and role (KubeDirector's selectors and the admission webhook's matching use them)."""

    namespace: str
    statefulset: str
    role: str
    labels: tuple[tuple[str, str], ...]
    cluster: str

    def describe(self) -> str:
        return (
            f"restore labels {', '.join(f'{k}={v}' for k, v in self.labels)} on StatefulSet "
            f"{self.namespace}/{self.statefulset} (role {self.role})"
        )


@dataclass(frozen=True)
class ClearBreakGlass(_ClusterScoped):
    """Remove the break-glass annotation (reason ``reason``) left on a managed object of ``kind`` (the KDCluster,
    a role StatefulSet or a member Service) after the request it came with: break-glass is per request, never a
    standing marker."""

    namespace: str
    kind: str
    name: str
    reason: str
    cluster: str

    def describe(self) -> str:
        return f"remove the break-glass annotation ({self.reason!r}) left on {self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class RecordInSync(_ClusterScoped):
    """Record on the KDRollout that the cluster was seen in sync with Git: ``digest`` (drift.baseline) at
    ``commit``, so drift detection keeps its baseline across a controller restart."""

    namespace: str
    cluster: str
    digest: str
    commit: str

    def describe(self) -> str:
        return f"record {self.namespace}/{self.cluster} in sync at commit {self.commit[:12]}"


@dataclass(frozen=True)
class NoteStep(_ClusterScoped):
    """Set the KDRollout's status.step to ``step`` (None clears it): what a rollout held back is waiting for."""

    namespace: str
    cluster: str
    step: str | None

    def describe(self) -> str:
        return f"note on {self.namespace}/{self.cluster}: {self.step or 'no longer waiting'}"


@dataclass(frozen=True)
class RecordStages(_ClusterScoped):
    """Set status.pods[pod].stage of the KDRollout for each (pod, stage) in ``stages``: where each member is in
    the rollout, as the planner decided it (plan/pods.pod_stages); the UI, CLI and health read this record."""

    namespace: str
    cluster: str
    stages: tuple[tuple[str, str], ...]

    def describe(self) -> str:
        said = ", ".join(f"{pod} {stage}" for pod, stage in self.stages)
        return f"record pod stages of {self.namespace}/{self.cluster}: {said}"


@dataclass(frozen=True)
class RecordUnreachable(_ClusterScoped):
    """Set the KDRollout's status.unreachable to ``members`` (empty: remove it): the members whose own Service
    targets other ports than their running pod listens on, derived from the observed Services and pods
    (plan/reach.py); the UI, CLI and a traffic test read this record."""

    namespace: str
    cluster: str
    members: tuple[Unreachable, ...]

    def describe(self) -> str:
        said = "; ".join(m.describe() for m in self.members) or "none"
        return f"record unreachable members of {self.namespace}/{self.cluster}: {said}"


@dataclass(frozen=True)
class Stall(_ClusterScoped):
    """Mark the rollout Stalled (phase Stalled, Stalled=True with ``reason``/``message``); no more steps."""

    namespace: str
    cluster: str
    reason: str
    message: str

    def describe(self) -> str:
        return f"stall rollout of {self.namespace}/{self.cluster}: {self.reason}: {self.message}"


@dataclass(frozen=True)
class LiftStall(_ClusterScoped):
    """End an apply stall (ApplyRefused / ApplyFailed) whose write Git no longer asks for: the phase from before
    it, Reconciling=True with ``message``; the cluster is planned as usual again."""

    namespace: str
    cluster: str
    message: str

    def describe(self) -> str:
        return f"lift the stall of {self.namespace}/{self.cluster}: {self.message}"


@dataclass(frozen=True)
class HandleFailure(_ClusterScoped):
    """Apply the app's failurePolicy to a Stalled rollout, once per offending ``commit``.

    Always: record status.failure {commit, reason, policy, handledAt} in the KDRollout, an Event and a
    metric naming the commit to revert. With ``revert`` (failurePolicy revert-commit, an upgrade that
    failed on a pod/hook/gate and that the app allows to go back from): push a revert commit of
    ``commit`` to the Git branch (source/revert.py) and record it as status.failure.revertCommit.
    ``note`` says why a revert-commit policy did not revert ("" otherwise); ``rollback_possible`` whether a
    `git revert` of ``commit`` would be accepted (diff/rollback.py), ``rollback_why`` why (or why not).
    """

    namespace: str
    cluster: str
    app: str
    commit: str
    policy: str
    reason: str
    message: str
    target_version: str = ""
    from_version: str | None = None
    revert: bool = False
    note: str = ""
    rollback_possible: bool = True
    rollback_why: str = ""

    def describe(self) -> str:
        what = (
            f"push a revert of commit {self.commit[:12]}"
            if self.revert
            else f"halt (revert commit {self.commit[:12]} to roll back)"
            if self.rollback_possible
            else "halt (a revert would be refused: roll forward)"
        )
        return f"failure policy {self.policy} for {self.namespace}/{self.cluster} ({self.reason}): {what}"


@dataclass(frozen=True)
class Wait:
    """Nothing to do for ``cluster`` ((namespace, name), or None) until it changes or time passes."""

    reason: str
    requeue_after_seconds: float
    cluster: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if self.cluster is not None:
            object.__setattr__(self, "cluster", tuple(self.cluster))

    @property
    def cluster_key(self) -> tuple[str, str] | None:
        return self.cluster

    def describe(self) -> str:
        where = f"{self.cluster[0]}/{self.cluster[1]}: " if self.cluster else ""
        return f"wait: {where}{self.reason} (requeue after {self.requeue_after_seconds:g}s)"


Action = (
    ApplyApp
    | ApplyCluster
    | EnsureRollout
    | SetOnDelete
    | PatchTemplate
    | PatchServicePorts
    | DeletePod
    | RunStep
    | StartGate
    | CheckGate
    | FinishRollout
    | MarkMissing
    | NoteStep
    | Prune
    | RecordInSync
    | RecordStages
    | RecordUnreachable
    | Stall
    | LiftStall
    | HandleFailure
    | RestoreLabels
    | ClearBreakGlass
    | MarkUpgradable
    | SwitchApp
    | Wait
)


def waits_last(actions: Iterable[Action]) -> tuple[Action, ...]:
    """``actions`` with every Wait moved to the end, the order otherwise kept (so Plan.next() is real work)."""
    listed = list(actions)
    return tuple([a for a in listed if not isinstance(a, Wait)] + [a for a in listed if isinstance(a, Wait)])


__all__ = [
    "ADOPT",
    "DOWNGRADE",
    "HOOK_STEP",
    "MIGRATE_STEP",
    "REBUILD",
    "UPGRADE",
    "Action",
    "ApplyApp",
    "ApplyCluster",
    "CheckGate",
    "DeletePod",
    "EnsureRollout",
    "FinishRollout",
    "HandleFailure",
    "MarkUpgradable",
    "PatchServicePorts",
    "PatchTemplate",
    "Plan",
    "Refusal",
    "RunStep",
    "SetOnDelete",
    "Stall",
    "StartGate",
    "SwitchApp",
    "Wait",
]
