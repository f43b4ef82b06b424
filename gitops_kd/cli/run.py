"""`gitops-kd run`: the controller — poll a Git repo and make the cluster match it, upgrading apps live."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import click

from gitops_kd.cli.alerting import alert_options
from gitops_kd.cli.envvars import settable_from_env
from gitops_kd.cli.exits import CannotRun
from gitops_kd.cli.gitcreds import apply_git_credentials, git_credential_options
from gitops_kd.cli.kubeclient import load_api_client
from gitops_kd.cli.options import KUBECONFIG_HELP, budget_options, loadbalancer_health_option
from gitops_kd.constants import LEASE_DURATION, LEASE_RENEW_DEADLINE, LEASE_RETRY_PERIOD, UNHEALTHY_AFTER_SECONDS
from gitops_kd.redact import add_secret, add_secret_url, install_log_filter
from gitops_kd.source import GitSource
from gitops_kd.source.budget import Budget

log = logging.getLogger(__name__)


def repo_url(repo: str) -> str:
    """A local path becomes absolute (git runs inside the cache dir); anything else is a git URL."""
    return str(Path(repo).resolve()) if os.path.exists(repo) else repo


def watch_scope(namespace: str, all_namespaces: bool, watch_namespaces: tuple[str, ...]) -> str | frozenset[str] | None:
    """What the controller observes and manages: the --watch-namespace set, every namespace
    (--all-namespaces, None), or --namespace alone."""
    if watch_namespaces and all_namespaces:
        raise click.UsageError(
            "--watch-namespace and --all-namespaces are mutually exclusive: a shard watches "
            "the namespaces it names, --all-namespaces watches every one"
        )
    if watch_namespaces:
        return frozenset(watch_namespaces)
    return None if all_namespaces else namespace


def parse_listen(value: str | None) -> tuple[str, int] | None:
    """ "HOST:PORT" or ":PORT" (127.0.0.1) or "off"/"" (no HTTP endpoints)."""
    if value is None or value in ("", "off", "none"):
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"{value!r}: expected HOST:PORT, e.g. 127.0.0.1:8080", param_hint="--listen")
    return host or "127.0.0.1", int(port)


def check_free(flag: str, address: tuple[str, int] | None) -> None:
    """CannotRun at once when `address` cannot be bound (a port in use, an address not on this host), before the
    controller starts anything; bound and closed again as the server binds it (SO_REUSEADDR)."""
    if address is None:
        return
    host, port = address
    try:
        with socket.create_server((host, port), reuse_port=False) as sock:
            sock.close()
    except OSError as exc:
        raise CannotRun(
            f"{flag} {host}:{port}: cannot listen there ({os.strerror(exc.errno) if exc.errno else exc}); "
            "stop what uses it, or pick another port"
        ) from exc


def setup_logging(level: str) -> None:
    chosen = getattr(logging, level.upper(), logging.INFO)
    logging.basicConfig(level=chosen, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    install_log_filter()  # every line the process logs goes through gitops_kd.redact
    # apscheduler logs two INFO lines per poll ("Running job", "executed successfully"): noise, not news
    logging.getLogger("apscheduler").setLevel(max(chosen, logging.WARNING))


@click.command("run")
@click.option("--repo", required=True, help="Git URL or local path of the desired-state repository.")
@click.option("--branch", default="main", show_default=True)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help=KUBECONFIG_HELP)
@click.option("--context", default=None, help="Kubeconfig context to use (default: its current context).")
@click.option(
    "-n",
    "--namespace",
    default="default",
    show_default=True,
    help="Default namespace for manifests without one; also the namespace watched (without "
    "--watch-namespace / --all-namespaces).",
)
@click.option(
    "-A", "--all-namespaces", is_flag=True, help="Watch every namespace (for repos whose manifests name other namespaces)."
)
@click.option(
    "--watch-namespace",
    "watch_namespaces",
    multiple=True,
    metavar="NS",
    help="Observe and manage exactly these namespaces (repeatable; a shard). Manifests in other "
    "namespaces are skipped. Without --lease-name the Lease is gitops-kd-<hash of the set>.",
)
@click.option("--interval", type=float, default=30.0, show_default=True, help="Git poll interval in seconds.")
@click.option(
    "--listen",
    default="127.0.0.1:8080",
    show_default=True,
    help='HTTP endpoints (/webhook, /healthz, /readyz, /metrics, /ui) address, "off" to disable.',
)
@click.option(
    "--ui/--no-ui",
    "ui",
    default=True,
    show_default=True,
    help="Serve the read-only web UI under /ui on the --listen address (docs/ui.md).",
)
@click.option(
    "--ui-auth-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="File of UI credentials ('bearer <token>' / 'basic <user>:<password>' lines, e.g. a mounted "
    "Secret): /ui then answers 401 without one. Without it /ui is open like /metrics.",
)
@click.option(
    "--ui-refresh",
    type=click.FloatRange(min=0.2),
    default=2.0,
    show_default=True,
    help="Seconds between the UI pages' live updates.",
)
@loadbalancer_health_option
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the Git clone lives (default: a temp dir). Only a cache: what is applied is "
    "recorded in the cluster, in the GitOpsKDSource named after the Lease.",
)
@click.option(
    "--webhook-secret-file",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="File with the push webhook secret: /webhook then requires a valid GitHub signature "
    "(X-Hub-Signature-256) or GitLab token. Without it any POST triggers a poll.",
)
@click.option(
    "--wave-soak",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Seconds a wave must have been Ready before the next wave of the app starts "
    "(a cluster's gitops-kd.io/wave-soak-seconds annotation overrides it).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Reconciles run in parallel, each on one KDCluster or KDApp (default: two per core, 2-8).",
)
@click.option(
    "--prune",
    is_flag=True,
    help="Delete the KDClusters and KDApps gitops-kd applied that Git no longer has (default: keep them).",
)
@click.option(
    "--drift-policy",
    type=click.Choice(["revert", "alert-only"]),
    default="revert",
    show_default=True,
    help="Out-of-band edits of owned fields: revert them (and alert), or only alert. A KDCluster/KDApp's "
    "gitops-kd.io/drift-policy annotation overrides it.",
)
@click.option("--drift-webhook", default=None, help="Also POST drift alerts (JSON) to this http(s) URL.")
@alert_options
@click.option(
    "--drift-ignore",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="YAML file of drift ignore rules (see docs/drift.md).",
)
@click.option(
    "--leader-elect/--no-leader-elect",
    default=True,
    show_default=True,
    help="Reconcile only while holding the Lease --lease-name in --lease-namespace (several replicas).",
)
@click.option(
    "--unhealthy-after",
    type=click.FloatRange(min=0),
    default=UNHEALTHY_AFTER_SECONDS,
    show_default=True,
    help="Seconds after which /healthz fails (liveness) while the controller cannot plan: the instance record "
    "not trusted, or the local Git cache unreadable even after cloning it again (0: never).",
)
@click.option(
    "--shards",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Split the KDClusters into this many shards, each held under its own Lease: every replica "
    "reconciles the shards it holds, balanced as replicas come and go (1: one leader does all).",
)
@click.option(
    "--lease-name",
    default="gitops-kd",
    show_default=True,
    help="The Lease replicas of one controller share (with --shards, the prefix of the shard Leases); give each "
    "namespace shard (--watch-namespace) its own.",
)
@click.option(
    "--lease-namespace",
    default=None,
    help="Namespace of the Lease (default: $POD_NAMESPACE, else the service account's namespace when "
    "in a cluster, else --namespace).",
)
@click.option(
    "--lease-duration",
    type=click.FloatRange(min=0, min_open=True),
    default=LEASE_DURATION,
    show_default=True,
    help="Seconds a Lease not renewed may be taken over by a standby (--leader-elect).",
)
@click.option(
    "--lease-renew-deadline",
    type=click.FloatRange(min=0, min_open=True),
    default=LEASE_RENEW_DEADLINE,
    show_default=True,
    help="Seconds without a successful renewal after which the leader stops leading (less than --lease-duration).",
)
@click.option(
    "--lease-retry-period",
    type=click.FloatRange(min=0, min_open=True),
    default=LEASE_RETRY_PERIOD,
    show_default=True,
    help="Seconds between renewals of the leader and attempts of a standby (--lease-renew-deadline must exceed 1.2 times it).",
)
@click.option(
    "--trusted-key",
    "trusted_keys",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    help="ASCII-armored public key file (repeatable): only commits signed by one of them are applied.",
)
@click.option(
    "--allow-force-push",
    is_flag=True,
    help="Accept a branch head that does not descend from the applied commit (refused by default).",
)
@click.option(
    "--admission-listen",
    default="off",
    show_default=True,
    help='Serve the validating admission webhook (POST /admission, HTTPS) on HOST:PORT; "off" to disable '
    "(docs/drift.md, deploy/optional/admission).",
)
@click.option(
    "--admission-service",
    default="gitops-kd-admission",
    show_default=True,
    help="The Service the API server calls the webhook through (its names go into the certificate).",
)
@click.option(
    "--admission-secret",
    default="gitops-kd-admission-tls",
    show_default=True,
    help="Secret (in the controller's namespace) holding the generated serving certificate.",
)
@click.option(
    "--admission-config",
    default="gitops-kd",
    show_default=True,
    help="ValidatingWebhookConfiguration whose caBundle the controller keeps current.",
)
@click.option(
    "--admission-cert-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Serve tls.crt/tls.key from this directory (e.g. a cert-manager Secret) instead of generating "
    "one; the caBundle is then left to cert-manager's cainjector.",
)
@click.option(
    "--admission-user",
    "admission_users",
    multiple=True,
    metavar="USER",
    help="User whose edits of owned fields are gitops-kd's own (repeatable; default: "
    "system:serviceaccount:<namespace>:gitops-kd).",
)
@click.option(
    "--kubedirector-user",
    "kubedirector_users",
    multiple=True,
    metavar="USER",
    help="KubeDirector's user (repeatable; default: system:serviceaccount:kubedirector:kubedirector).",
)
@click.option(
    "--break-glass-group",
    "break_glass_groups",
    multiple=True,
    metavar="GROUP",
    help="Members of this group may change owned fields by hand (audited; repeatable).",
)
@git_credential_options
@budget_options
@click.option("--log-level", default="info", show_default=True)
def command(
    repo: str,
    branch: str,
    kubeconfig: str | None,
    context: str | None,
    namespace: str,
    all_namespaces: bool,
    watch_namespaces: tuple[str, ...],
    interval: float,
    listen: str,
    ui: bool,
    ui_auth_file: str | None,
    ui_refresh: float,
    loadbalancer_health: str,
    cache_dir: str | None,
    webhook_secret_file: str | None,
    wave_soak: float,
    workers: int | None,
    prune: bool,
    drift_policy: str,
    drift_webhook: str | None,
    alert_webhook: tuple[str, ...],
    alert_slack: tuple[str, ...],
    alert_alertmanager: tuple[str, ...],
    alert_sources: tuple[str, ...],
    alert_min_severity: str,
    drift_ignore: str | None,
    leader_elect: bool,
    lease_name: str,
    lease_namespace: str | None,
    lease_duration: float,
    lease_renew_deadline: float,
    lease_retry_period: float,
    trusted_keys: tuple[str, ...],
    allow_force_push: bool,
    admission_listen: str,
    admission_service: str,
    admission_secret: str,
    admission_config: str,
    admission_cert_dir: str | None,
    admission_users: tuple[str, ...],
    kubedirector_users: tuple[str, ...],
    break_glass_groups: tuple[str, ...],
    ssh_key_file: str | None,
    known_hosts_file: str | None,
    git_token_file: str | None,
    git_credentials_dir: str | None,
    log_level: str,
    unhealthy_after: float,
    shards: int,
    max_commit_bytes: int,
    max_commit_files: int,
) -> None:
    """Run the controller until SIGINT/SIGTERM (a running step finishes first)."""
    from gitops_kd.controller import build_manager
    from gitops_kd.controller.options import AdmissionOptions, AlertOptions, DriftOptions, LeaseOptions, Options, SourceOptions

    setup_logging(log_level)
    secret = None
    if webhook_secret_file:
        from gitops_kd.server.webhook import load_secret

        secret = load_secret(webhook_secret_file)
        add_secret(secret.decode(errors="replace"))
    for url in (*alert_webhook, *alert_slack, *alert_alertmanager, *((drift_webhook,) if drift_webhook else ())):
        add_secret_url(url)  # an incoming webhook's path is its credential
    add_secret_url(repo, path_is_secret=False)
    _check_lease_timings(lease_duration, lease_renew_deadline, lease_retry_period)
    options = Options(
        namespace=namespace,
        scope=watch_scope(namespace, all_namespaces, watch_namespaces),
        poll_interval=interval,
        listen=parse_listen(listen),
        ui=_ui_settings(ui, ui_auth_file, ui_refresh, loadbalancer_health),
        webhook_secret=secret,
        wave_soak_seconds=wave_soak,
        prune=prune,
        workers=workers,
        shards=shards,
        unhealthy_after=unhealthy_after,
        source=SourceOptions(
            repo=repo_url(repo),
            branch=branch,
            cache_dir=cache_dir,
            trusted_keys=tuple(_read_key(path) for path in trusted_keys),
            allow_force_push=allow_force_push,
        ),
        drift=DriftOptions(policy=drift_policy, webhook_url=drift_webhook, ignore_file=drift_ignore),
        alerts=AlertOptions(
            webhooks=alert_webhook,
            slacks=alert_slack,
            alertmanagers=alert_alertmanager,
            sources=alert_sources,
            min_severity=alert_min_severity,
        ),
        lease=LeaseOptions(
            elect=leader_elect,
            name=_lease_name(lease_name, watch_namespaces),
            namespace=lease_namespace or _own_namespace(namespace),
            duration=lease_duration,
            renew_deadline=lease_renew_deadline,
            retry_period=lease_retry_period,
        ),
        admission=AdmissionOptions(
            listen=parse_listen(admission_listen),
            service=admission_service,
            secret=admission_secret,
            config=admission_config,
            cert_dir=admission_cert_dir,
            users=admission_users,
            kubedirector_users=kubedirector_users,
            break_glass_groups=break_glass_groups,
        ),
    )
    check_free("--listen", options.listen)
    check_free("--admission-listen", options.admission.listen)
    api_client = load_api_client(kubeconfig, context)
    apply_git_credentials(ssh_key_file, known_hosts_file, git_token_file, git_credentials_dir)
    try:
        source = GitSource(
            options.source.repo,
            branch,
            cache_dir,
            default_namespace=namespace,
            trusted_keys=list(options.source.trusted_keys) or None,
            allow_force_push=allow_force_push,
            budget=Budget(max_commit_bytes, max_commit_files),
        )
    except ValueError as exc:
        raise CannotRun(f"--trusted-key: {exc}") from exc
    stop, signalled = threading.Event(), threading.Event()

    def on_signal(*_: object) -> None:
        signalled.set()
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    manager = build_manager(
        options, api_client=api_client, source=source, on_lease_lost=stop.set
    )  # losing the Lease stops reconciling at once
    admission = None
    lease_lost = False
    try:
        if options.admission.listen is not None:
            admission = _admission(api_client, manager, options)
        _serving(manager.serve())
        while not stop.wait(0.5):
            pass
        lease_lost = manager.replica is not None and manager.replica.lost.is_set() and not signalled.is_set()
        click.echo("gitops-kd: stopping (finishing the running action)", err=True)
    finally:
        if admission is not None:
            admission.stop()
        manager.close()
        source.close()
    if lease_lost and manager.replica.elector.yielded:
        raise SystemExit("gitops-kd: yielded the leader lease to sharded replicas; exiting so a restart campaigns again")
    if lease_lost:
        raise SystemExit("gitops-kd: lost the leader lease; exiting so a restart campaigns again")


def _check_lease_timings(duration: float, renew_deadline: float, retry_period: float) -> None:
    """client-go's rules for the three timings, as a usage error naming the flags."""
    from gitops_kd.kube.leader import JITTER_FACTOR

    if duration <= renew_deadline:
        raise click.UsageError(
            f"--lease-duration ({duration:g}) must be greater than --lease-renew-deadline ({renew_deadline:g})"
        )
    if renew_deadline <= JITTER_FACTOR * retry_period:
        raise click.UsageError(
            f"--lease-renew-deadline ({renew_deadline:g}) must be greater than {JITTER_FACTOR:g} "
            f"times --lease-retry-period ({retry_period:g})"
        )


def _admission(api_client: Any, controller: Any, options: Any) -> Any:
    """Start the admission webhook on this replica, leading or not: verdicts from the revision the GitOpsKDSource
    `namespace/record_name` records as applied (read from Git here) and from the watch caches, which start now
    (as controller-runtime starts its caches on every replica); they only read."""
    from gitops_kd.admission.applied import AppliedRevision
    from gitops_kd.admission.service import AdmissionServer, AdmissionSettings
    from gitops_kd.drift.admit import Identities
    from gitops_kd.drift.rules import IgnoreRules

    def leader_state(sha: str) -> Any:
        desired = controller.desired
        return desired if desired is not None and desired.commit == sha else None

    controller.collector.start()
    namespace = options.own_namespace
    revision = AppliedRevision(api_client, controller.source, namespace=namespace, name=options.lease.name, local=leader_state)

    def observed() -> Any:
        try:
            return controller.collector.snapshot() if controller.collector.wait_synced(0) else None
        except Exception:  # noqa: BLE001 - the verdict then uses no transition facts
            return None

    adm, ignore_file = options.admission, options.drift.ignore_file
    who = Identities(
        controller=frozenset(adm.users or (f"system:serviceaccount:{namespace}:gitops-kd",)),
        kubedirector=frozenset(adm.kubedirector_users or ("system:serviceaccount:kubedirector:kubedirector",)),
        break_glass_groups=frozenset(adm.break_glass_groups),
    )
    settings = AdmissionSettings(
        host=adm.listen[0],
        port=adm.listen[1],
        namespace=namespace,
        service=adm.service,
        secret=adm.secret,
        config=adm.config,
        cert_dir=adm.cert_dir,
    )
    server = AdmissionServer(
        api_client,
        settings,
        revision=revision,
        observed=observed,
        who=who,
        rules=IgnoreRules.from_file(ignore_file) if ignore_file else None,
        metrics=controller.metrics,
    ).start()
    if server.http is not None:
        click.echo(f"gitops-kd: serving the admission webhook on {server.http.url}/admission", err=True)
    return server


def _lease_name(given: str, watch_namespaces: tuple[str, ...]) -> str:
    """--lease-name, or for a shard left at the default a Lease of its own (gitops-kd-<hash of its namespaces>)."""
    from click.core import ParameterSource

    from gitops_kd.controller.scope import shard_lease_name

    ctx = click.get_current_context(silent=True)
    defaulted = ctx is None or ctx.get_parameter_source("lease_name") in (ParameterSource.DEFAULT, None)
    return shard_lease_name(watch_namespaces, given) if watch_namespaces and defaulted else given


def _ui_settings(enabled: bool, auth_file: str | None, refresh: float, loadbalancer: str) -> Any:
    """The UiSettings of --ui/--ui-auth-file/--ui-refresh/--loadbalancer-health; the auth file is checked now, not at
    the first request."""
    from gitops_kd.server.ui import AuthFileError, UiSettings

    settings = UiSettings(enabled=enabled, auth_file=auth_file, refresh_seconds=refresh, loadbalancer_health=loadbalancer)
    if enabled:
        try:
            settings.auth()
        except AuthFileError as exc:
            raise click.BadParameter(str(exc), param_hint="--ui-auth-file") from exc
    return settings


def _serving(http: Any) -> None:
    if http is not None:
        click.echo(
            f"gitops-kd: serving /webhook, /healthz, /readyz, /metrics, /ui on {http.url} (web UI: {http.url}/ui/)", err=True
        )


def _own_namespace(fallback: str) -> str:
    """$POD_NAMESPACE (downward API), else the in-cluster service account's namespace, else `fallback`."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    sa = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
    try:
        return sa.read_text().strip() or fallback
    except OSError:
        return fallback


def _read_key(path: str) -> str:
    text = Path(path).read_text(errors="replace")
    if "BEGIN PGP PUBLIC KEY BLOCK" not in text:
        raise click.BadParameter(f"{path}: not an ASCII-armored OpenPGP public key", param_hint="--trusted-key")
    return text


settable_from_env(command)  # every flag also from GITOPS_KD_<FLAG> (charts/gitops-kd's ConfigMap)
