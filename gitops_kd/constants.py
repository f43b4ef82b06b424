"""Names defined once: gitops-kd's API group, kind, rollout phases, label and annotation keys, requeue delays (pure).

Like gitops-engine's pkg/sync/common/types.go: every module that writes or reads one of these names imports
it from here. KubeDirector's own names (its API version, kinds, plurals and labels) are facts about
KubeDirector and live in gitops_kd/kd/layout.py.
"""

from __future__ import annotations

from enum import StrEnum

# -- the KDRollout custom resource (gitops_kd/crds/kdrollout.yaml) ----------------------------------------
GROUP = "gitops-kd.io"
ROLLOUT_VERSION = "v1alpha1"
ROLLOUT_API_VERSION = f"{GROUP}/{ROLLOUT_VERSION}"
ROLLOUT_KIND = "KDRollout"
ROLLOUT_PLURAL = "kdrollouts"

# KDRollout status.phase: Idle when the cluster runs the target version, else the rollout's direction,
# or Stalled when a step failed for good.
# A str enum: its values are what the CRD and `kubectl wait --for=jsonpath='{.status.phase}'=Stalled` see.


class Phase(StrEnum):
    """KDRollout status.phase."""

    IDLE = "Idle"
    UPGRADING = "Upgrading"
    DOWNGRADING = "Downgrading"
    STALLED = "Stalled"


ROLLOUT_PHASES = tuple(Phase)
ACTIVE_PHASES = (Phase.UPGRADING, Phase.DOWNGRADING, Phase.STALLED)

# -- failures that repeat (docs/operations.md, "Failures that repeat") ------------------------------------
# The same action failing this many times in a row stalls the cluster's KDRollout with a named reason:
# an exec the API server will not start (ExecFailed), or a KDApp / KDCluster write it refuses (ApplyRefused:
# a 4xx such as an admission webhook's denial) or fails (ApplyFailed: 5xx, 429, timeouts). 404 and 409 are
# races, not counted. Retries back off 2, 4, 8, 16 s, then every FAILURE_RETRY_CAP seconds.
STALL_AFTER_FAILURES = 5
FAILURE_RETRY_CAP = 30.0


class StallReason(StrEnum):
    """A stalled KDRollout's reason (RolloutStatus.stalled_reason, and the Stalled condition's reason);
    docs/troubleshooting.md explains each (tests/test_docs_troubleshooting.py checks that every reason the code
    stalls with has its section there)."""

    APPLY_REFUSED = "ApplyRefused"  # a KDApp / KDCluster write refused (4xx) STALL_AFTER_FAILURES times in a row
    APPLY_FAILED = "ApplyFailed"  # a KDApp / KDCluster write failed (5xx, 429, timeouts) as many times
    EXEC_FAILED = "ExecFailed"  # a step's exec not started (or unanswered) STALL_AFTER_FAILURES times in a row
    STEP_FAILED = "StepFailed"  # a migration or hook exited non-zero (also the Warning Event of a failed step)
    STEP_TIMED_OUT = "StepTimedOut"  # a step ran longer than its timeoutSeconds
    STEP_INTERRUPTED = "StepInterrupted"  # a step started before never finished; it is never run twice
    POD_NOT_READY = "PodNotReady"  # a replaced pod not Ready within podReadyTimeoutSeconds
    GATE_TIMEOUT = "GateTimeout"  # the upgrade gate did not pass within its timeoutSeconds
    # member pods run another image than the version the rollout records, and the plan is refused (nothing
    # gitops-kd may do brings them back): Ready is never claimed over them (docs/design/stock-kubedirector.md)
    PODS_OFF_VERSION = "PodsOffVersion"
    # KubeDirector reports the cluster not ready (a member in config error at once; creating, updating or a member
    # container down for longer than podReadyTimeoutSeconds): its Stalled condition (the phase is left as it is:
    # the pods run the version, KubeDirector does not agree they are ready; docs/concepts.md, "Ready")
    KUBEDIRECTOR_NOT_READY = "KubeDirectorNotReady"


APPLY_STALL_REASONS = (StallReason.APPLY_REFUSED, StallReason.APPLY_FAILED)
# KDRollout condition KubeDirectorReady: False (reason KubeDirectorNotReady, KubeDirector's words) while KubeDirector
# reports the cluster not ready though every pod runs the version; its lastTransitionTime says since when. Absent
# otherwise. Reconciling=True with reason WAITING_FOR_KUBEDIRECTOR meanwhile, until it lasts too long (Stalled).
KUBEDIRECTOR_READY_CONDITION = "KubeDirectorReady"
WAITING_FOR_KUBEDIRECTOR = "WaitingForKubeDirector"
# KDRollout status.applyFailure: the last KDApp / KDCluster write that failed (kind, namespace, name, digest of
# the manifest, failures in a row, HTTP code, the server's message, the phase before the stall)
APPLY_FAILURE_FIELD = "applyFailure"

# -- stock KubeDirector (docs/design/stock-kubedirector.md) ------------------------------------------------
# KDRollout status.images: role id -> the app image of the version the rollout is Ready at (written with Ready);
# status.targetStanza: the upgrade stanza (JSON) of the attempt's target (the held KDApp does not carry it).
ROLLOUT_IMAGES_FIELD = "images"
TARGET_STANZA_FIELD = "targetStanza"

# -- labels and annotations gitops-kd owns (everything under OWNED_PREFIX follows Git exactly) -----------
OWNED_PREFIX = f"{GROUP}/"
UPGRADE_ANNOTATION = f"{GROUP}/upgrade"  # on a KDApp: its upgrade stanza (JSON)
WAVE_LABEL = f"{GROUP}/wave"  # on a KDCluster: its rollout wave
APPLIED_ANNOTATION = f"{GROUP}/applied-spec"  # digest of the manifest gitops-kd applied
# "<applied-spec digest>@<generation>": gitops-kd wrote that revision and the server (KubeDirector's webhook, a
# pruning CRD) stored a spec that still differs from Git's; while the generation stays, the write is not repeated
SERVER_KEPT_ANNOTATION = f"{GROUP}/server-kept"
# the Warning Event on such an object: the fields the server keeps different from Git
SERVER_KEPT_FIELDS = "ServerKeptFields"
APP_VERSION_ANNOTATION = f"{GROUP}/app-version"  # on a pod template: the app version it runs
PRUNE_ANNOTATION = f"{GROUP}/prune"
# on a KDCluster: "true" = its roles' storage relies on the target cluster's default StorageClass (validate accepts
# a role's storage without storageClassName; the controller still checks the class exists before creating it)
DEFAULT_STORAGE_CLASS_ANNOTATION = f"{GROUP}/default-storage-class"
SOAK_ANNOTATION = f"{GROUP}/wave-soak-seconds"
POLICY_ANNOTATION = f"{GROUP}/drift-policy"
BREAK_GLASS_ANNOTATION = f"{GROUP}/break-glass"  # on an edited object: why an owned field is changed by hand
# on a GitOpsKDSource: `gitops-kd sync` asks its controller to poll Git now (Flux: reconcile.fluxcd.io/requestedAt)
REQUESTED_AT_ANNOTATION = f"reconcile.{GROUP}/requestedAt"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGER = "gitops-kd"

# -- requeue delays (seconds) ----------------------------------------------------------------------------
REQUEUE_NOT_CACHED = 1.0  # an object the action needs is not in the watch cache yet
REQUEUE_NOT_SYNCED = 0.2  # the watch caches have not finished their first list

# -- the instance record (GitOpsKDSource; controller/record_keeper.py) ----------------------------------------------
# Stalled reason of a GitOpsKDSource whose record disagrees with Git or with what the cluster shows (a commit not in
# Git, a baseline it does not descend from, a KDRollout attempt newer than lastAppliedRevision): nothing is planned
# from it until it checks out again (fixed by hand, or deleted: then re-established from the cluster's KDRollouts).
STALL_RECORD_UNTRUSTED = "RecordUntrusted"
UNHEALTHY_AFTER_SECONDS = 600.0  # `run --unhealthy-after`: /healthz fails once the controller could not plan this long
RECORD_CHECK_INTERVAL = 2.0  # seconds between the leader's reads of its record (rewrite an edit, recreate a delete)
RECORD_RETRY_CAP = 8.0  # a failing record write is retried after 0.5, 1, 2, 4, then every this many seconds

# -- leader election (seconds; client-go's defaults, `gitops-kd run --lease-duration ...` overrides them) -----------
LEASE_DURATION = 15.0  # a Lease not renewed for this long may be taken over by a standby
LEASE_RENEW_DEADLINE = 10.0  # the leader stops leading when no renewal succeeded for this long
LEASE_RETRY_PERIOD = 2.0  # how often the leader renews and a standby tries to acquire
