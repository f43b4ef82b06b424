"""Options: every setting of `gitops-kd run`, one frozen value that build_manager wires the controller from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitops_kd.constants import LEASE_DURATION, LEASE_RENEW_DEADLINE, LEASE_RETRY_PERIOD, UNHEALTHY_AFTER_SECONDS

Scope = str | frozenset[str] | None  # one namespace, a set of them (a shard) or None (every namespace)
Address = tuple[str, int]  # (host, port)


@dataclass(frozen=True)
class SourceOptions:
    """--repo, --branch, --cache-dir, --trusted-key, --allow-force-push (the caller builds the GitSource)."""

    repo: str = ""
    branch: str = "main"
    cache_dir: str | None = None
    trusted_keys: tuple[str, ...] = ()  # ASCII-armored public keys (their text, not their files)
    allow_force_push: bool = False


@dataclass(frozen=True)
class DriftOptions:
    """--drift-policy, --drift-webhook, --drift-ignore: the drift stage after each plan."""

    policy: str = "revert"  # or "alert-only"
    webhook_url: str | None = None
    ignore_file: str | None = None


@dataclass(frozen=True)
class AlertOptions:
    """--alert-webhook, --alert-slack, --alert-alertmanager (URLs), --alert-source, --alert-min-severity."""

    webhooks: tuple[str, ...] = ()
    slacks: tuple[str, ...] = ()
    alertmanagers: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # () = every source
    min_severity: str = "warning"


@dataclass(frozen=True)
class LeaseOptions:
    """--leader-elect and the --lease-* flags; the Lease also names the instance record (GitOpsKDSource)."""

    elect: bool = True
    name: str = "gitops-kd"
    namespace: str | None = None  # None: the Options' namespace
    duration: float = LEASE_DURATION
    renew_deadline: float = LEASE_RENEW_DEADLINE
    retry_period: float = LEASE_RETRY_PERIOD


@dataclass(frozen=True)
class AdmissionOptions:
    """The --admission-* flags (the webhook runs on every replica; cli/run.py starts it)."""

    listen: Address | None = None
    service: str = "gitops-kd-admission"
    secret: str = "gitops-kd-admission-tls"
    config: str = "gitops-kd"
    cert_dir: str | None = None
    users: tuple[str, ...] = ()
    kubedirector_users: tuple[str, ...] = ()
    break_glass_groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Options:
    """One instance of the controller: what it follows, what it watches, how it serves and acts.

    ``per_key`` chooses the reconcile mode: True (the default, what `run` does) plans each KDCluster and KDApp key
    on ``workers`` threads; False plans the whole fleet on one key (one worker). ``record``: keep the instance
    record (the GitOpsKDSource named after the Lease) and answer `gitops-kd sync`; ``metrics``: update the
    Prometheus metrics served on /metrics. ``ui`` is a gitops_kd.server.ui.UiSettings (None: no /ui).
    """

    namespace: str = "default"  # manifests without a namespace get this one
    scope: Scope = "default"  # what is observed and managed
    poll_interval: float = 30.0
    listen: Address | None = None
    ui: Any = None
    webhook_secret: bytes | None = None
    wave_soak_seconds: float = 0.0
    prune: bool = False
    workers: int | None = None  # None: controller.manager.default_workers()
    per_key: bool = True
    record: bool = True
    metrics: bool = True
    sync_check_interval: float | None = None  # seconds between reads of `gitops-kd sync` requests (None: default)
    unhealthy_after: float = UNHEALTHY_AFTER_SECONDS  # /healthz fails once no plan could run this long (0: never)
    shards: int = 1  # >1: every replica reconciles the shards it holds, each under its own Lease (docs/design/sharding.md)
    source: SourceOptions = field(default_factory=SourceOptions)
    drift: DriftOptions = field(default_factory=DriftOptions)
    alerts: AlertOptions = field(default_factory=AlertOptions)
    lease: LeaseOptions = field(default_factory=LeaseOptions)
    admission: AdmissionOptions = field(default_factory=AdmissionOptions)

    @property
    def own_namespace(self) -> str:
        """Where the Lease and the instance record live."""
        return self.lease.namespace or self.namespace
