"""`gitops-kd run`: the controller — poll a Git repo and make the cluster match it, upgrading apps live."""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path
from typing import Any

import click
import kubernetes.client
import kubernetes.config

from gitops_kd.cli.gitcreds import apply_git_credentials, git_credential_options
from gitops_kd.cli.options import KUBECONFIG_HELP
from gitops_kd.source import GitSource

log = logging.getLogger(__name__)


def repo_url(repo: str) -> str:
    """A local path becomes absolute (git runs inside the cache dir); anything else is a git URL."""
    return str(Path(repo).resolve()) if os.path.exists(repo) else repo


def load_api_client(kubeconfig: str | None, context: str | None = None) -> kubernetes.client.ApiClient:
    """--kubeconfig, else $KUBECONFIG / ~/.kube/config, else the in-cluster service account."""
    configuration = kubernetes.client.Configuration()
    if kubeconfig or os.environ.get("KUBECONFIG") or Path("~/.kube/config").expanduser().exists():
        kubernetes.config.load_kube_config(config_file=kubeconfig, context=context,
                                           client_configuration=configuration)
    else:
        try:
            kubernetes.config.load_incluster_config(client_configuration=configuration)
        except kubernetes.config.ConfigException as exc:
            raise click.ClickException(f"no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not "
                                       f"running in a cluster: {exc}") from exc
    return kubernetes.client.ApiClient(configuration)


def watch_scope(namespace: str, all_namespaces: bool, watch_namespaces: tuple[str, ...]) -> str | frozenset[str] | None:
    """What the controller observes and manages: the --watch-namespace set, every namespace
    (--all-namespaces, None), or --namespace alone."""
    if watch_namespaces and all_namespaces:
        raise click.UsageError("--watch-namespace and --all-namespaces are mutually exclusive: a shard watches "
                               "the namespaces it names, --all-namespaces watches every one")
    if watch_namespaces:
        return frozenset(watch_namespaces)
    return None if all_namespaces else namespace


def parse_listen(value: str | None) -> tuple[str, int] | None:
    """"HOST:PORT" or ":PORT" (127.0.0.1) or "off"/"" (no HTTP endpoints)."""
    if value is None or value in ("", "off", "none"):
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"{value!r}: expected HOST:PORT, e.g. 127.0.0.1:8080", param_hint="--listen")
    return host or "127.0.0.1", int(port)


def setup_logging(level: str) -> None:
    chosen = getattr(logging, level.upper(), logging.INFO)
    logging.basicConfig(level=chosen, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # apscheduler logs two INFO lines per poll ("Running job", "executed successfully"): noise, not news
    logging.getLogger("apscheduler").setLevel(max(chosen, logging.WARNING))


@click.command("run")
@click.option("--repo", required=True, help="Git URL or local path of the desired-state repository.")
@click.option("--branch", default="main", show_default=True)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help=KUBECONFIG_HELP)
@click.option("--context", default=None, help="Kubeconfig context to use (default: its current context).")
@click.option("-n", "--namespace", default="default", show_default=True,
              help="Default namespace for manifests without one; also the namespace watched (without "
                   "--watch-namespace / --all-namespaces).")
@click.option("-A", "--all-namespaces", is_flag=True,
              help="Watch every namespace (for repos whose manifests name other namespaces).")
@click.option("--watch-namespace", "watch_namespaces", multiple=True, metavar="NS",
              help="Observe and manage exactly these namespaces (repeatable; a shard). Manifests in other "
                   "namespaces are skipped. Without --lease-name the Lease is gitops-kd-<hash of the set>.")
@click.option("--interval", type=float, default=30.0, show_default=True, help="Git poll interval in seconds.")
@click.option("--listen", default="127.0.0.1:8080", show_default=True,
              help='HTTP endpoints (/webhook, /healthz, /readyz, /metrics, /ui) address, "off" to disable.')
@click.option("--ui/--no-ui", "ui", default=True, show_default=True,
              help="Serve the read-only web UI under /ui on the --listen address (docs/ui.md).")
@click.option("--ui-auth-file", type=click.Path(dir_okay=False), default=None,
              help="File of UI credentials ('bearer <token>' / 'basic <user>:<password>' lines, e.g. a mounted "
                   "Secret): /ui then answers 401 without one. Without it /ui is open like /metrics.")
@click.option("--ui-refresh", type=click.FloatRange(min=0.2), default=2.0, show_default=True,
              help="Seconds between the UI pages' live updates.")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="Where the Git clone lives (default: a temp dir). Only a cache: what is applied is "
                   "recorded in the cluster, in the GitOpsKDSource named after the Lease.")
@click.option("--webhook-secret-file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="File with the push webhook secret: /webhook then requires a valid GitHub signature "
                   "(X-Hub-Signature-256) or GitLab token. Without it any POST triggers a poll.")
@click.option("--wave-soak", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Seconds a wave must have been Ready before the next wave of the app starts "
                   "(a cluster's gitops-kd.io/wave-soak-seconds annotation overrides it).")
@click.option("--prune", is_flag=True,
              help="Delete the KDClusters and KDApps gitops-kd applied that Git no longer has (default: keep them).")
@click.option("--drift-policy", type=click.Choice(["revert", "alert-only"]), default="revert", show_default=True,
              help="Out-of-band edits of owned fields: revert them (and alert), or only alert. A KDCluster/KDApp's "
                   "gitops-kd.io/drift-policy annotation overrides it.")
@click.option("--drift-webhook", default=None, help="Also POST drift alerts (JSON) to this http(s) URL.")
@click.option("--drift-ignore", type=click.Path(dir_okay=False, exists=True), default=None,
              help="YAML file of drift ignore rules (see docs/drift.md).")
@click.option("--leader-elect/--no-leader-elect", default=True, show_default=True,
              help="Reconcile only while holding the Lease --lease-name in --lease-namespace (several replicas).")
@click.option("--lease-name", default="gitops-kd", show_default=True,
              help="The Lease replicas of one controller share; give each shard its own.")
@click.option("--lease-namespace", default=None,
              help="Namespace of the Lease (default: $POD_NAMESPACE, else the service account's namespace when "
                   "in a cluster, else --namespace).")
@click.option("--trusted-key", "trusted_keys", multiple=True, type=click.Path(dir_okay=False, exists=True),
              help="ASCII-armored public key file (repeatable): only commits signed by one of them are applied.")
@click.option("--allow-force-push", is_flag=True,
              help="Accept a branch head that does not descend from the applied commit (refused by default).")
@git_credential_options
@click.option("--log-level", default="info", show_default=True)
def command(repo: str, branch: str, kubeconfig: str | None, context: str | None, namespace: str,
            all_namespaces: bool, watch_namespaces: tuple[str, ...], interval: float,
            listen: str, ui: bool, ui_auth_file: str | None, ui_refresh: float, cache_dir: str | None,
            webhook_secret_file: str | None, wave_soak: float, prune: bool,
            drift_policy: str,
            drift_webhook: str | None, drift_ignore: str | None, leader_elect: bool, lease_name: str,
            lease_namespace: str | None, trusted_keys: tuple[str, ...], allow_force_push: bool,
            ssh_key_file: str | None, known_hosts_file: str | None, git_token_file: str | None,
            git_credentials_dir: str | None, log_level: str) -> None:
    """Run the controller until SIGINT/SIGTERM (a running step finishes first)."""
    from gitops_kd.controller import Controller
    from gitops_kd.controller.drift import drift_wiring
    from gitops_kd.controller.instance import InstanceRecord
    from gitops_kd.controller.syncrequest import SyncRequests
    from gitops_kd.server.metrics import ControllerMetrics

    setup_logging(log_level)
    scope = watch_scope(namespace, all_namespaces, watch_namespaces)
    lease_name = _lease_name(lease_name, watch_namespaces)
    address = parse_listen(listen)
    ui_settings = _ui_settings(ui, ui_auth_file, ui_refresh)
    secret = None
    if webhook_secret_file:
        from gitops_kd.server.webhook import load_secret
        secret = load_secret(webhook_secret_file)
    api_client = load_api_client(kubeconfig, context)
    apply_git_credentials(ssh_key_file, known_hosts_file, git_token_file, git_credentials_dir)
    keys = [_read_key(path) for path in trusted_keys]
    try:
        source = GitSource(repo_url(repo), branch, cache_dir, default_namespace=namespace, trusted_keys=keys or None,
                           allow_force_push=allow_force_push)
    except ValueError as exc:
        raise click.ClickException(f"--trusted-key: {exc}") from exc
    stop, signalled = threading.Event(), threading.Event()

    def on_signal(*_: object) -> None:
        signalled.set()
        stop.set()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    metrics = ControllerMetrics()
    own_namespace = lease_namespace or _own_namespace(namespace)
    record = InstanceRecord(api_client, namespace=own_namespace, name=lease_name, url=source.url, branch=branch)
    drift = drift_wiring(api_client, metrics=metrics, policy=drift_policy, webhook_url=drift_webhook,
                         ignore_file=drift_ignore, wave_soak_seconds=wave_soak, prune=prune)
    controller = Controller(source, api_client, namespace=scope,
                            poll_interval=interval, listen=None if leader_elect else address, planner=drift.planner,
                            metrics=metrics, webhook_secret=secret, wave_soak_seconds=wave_soak, record=record,
                            ui=ui_settings)
    drift.attach(controller)
    requests = SyncRequests(api_client, record, controller).start()  # `gitops-kd sync`
    replica = None
    lease_lost = False
    try:
        if leader_elect:
            from gitops_kd.controller.replica import Replica

            log.info("leader election: Lease %s", lease_name)
            replica = Replica(controller, api_client, lease_namespace=own_namespace,
                              lease_name=lease_name, listen=address, webhook_secret=secret, metrics=metrics,
                              on_lost=stop.set)  # losing the Lease stops reconciling at once
            replica.start()
            _serving(replica.http)
        else:
            controller.start()
            _serving(controller.http)
        while not stop.wait(0.5):
            pass
        lease_lost = replica is not None and replica.lost.is_set() and not signalled.is_set()
        click.echo("gitops-kd: stopping (finishing the running action)", err=True)
    finally:
        if replica is not None:
            replica.stop()
        else:
            controller.stop()
        requests.stop()
        drift.close()
        source.close()
    if lease_lost:
        raise SystemExit("gitops-kd: lost the leader lease; exiting so a restart campaigns again")


def _lease_name(given: str, watch_namespaces: tuple[str, ...]) -> str:
    """--lease-name, or for a shard left at the default a Lease of its own (gitops-kd-<hash of its namespaces>)."""
    from click.core import ParameterSource

    from gitops_kd.controller.scope import shard_lease_name

    ctx = click.get_current_context(silent=True)
    defaulted = ctx is None or ctx.get_parameter_source("lease_name") in (ParameterSource.DEFAULT, None)
    return shard_lease_name(watch_namespaces, given) if watch_namespaces and defaulted else given


def _ui_settings(enabled: bool, auth_file: str | None, refresh: float) -> Any:
    """The UiSettings of --ui/--ui-auth-file/--ui-refresh; the auth file is checked now, not at the first request."""
    from gitops_kd.server.ui import AuthFileError, UiSettings

    settings = UiSettings(enabled=enabled, auth_file=auth_file, refresh_seconds=refresh)
    if enabled:
        try:
            settings.auth()
        except AuthFileError as exc:
            raise click.BadParameter(str(exc), param_hint="--ui-auth-file") from exc
    return settings


def _serving(http: Any) -> None:
    if http is not None:
        click.echo(f"gitops-kd: serving /webhook, /healthz, /readyz, /metrics, /ui on {http.url} "
                   f"(web UI: {http.url}/ui/)", err=True)


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
