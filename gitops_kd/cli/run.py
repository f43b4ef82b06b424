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


def parse_listen(value: str | None) -> tuple[str, int] | None:
    """"HOST:PORT" or ":PORT" (127.0.0.1) or "off"/"" (no HTTP endpoints)."""
    if value is None or value in ("", "off", "none"):
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"{value!r}: expected HOST:PORT, e.g. 127.0.0.1:8080", param_hint="--listen")
    return host or "127.0.0.1", int(port)


def setup_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@click.command("run")
@click.option("--repo", required=True, help="Git URL or local path of the desired-state repository.")
@click.option("--branch", default="main", show_default=True)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster).")
@click.option("--context", default=None, help="Kubeconfig context.")
@click.option("--namespace", default="default", show_default=True,
              help="Default namespace for manifests without one; also the namespace watched.")
@click.option("--all-namespaces", is_flag=True,
              help="Watch every namespace (for repos whose manifests name other namespaces).")
@click.option("--interval", type=float, default=30.0, show_default=True, help="Git poll interval in seconds.")
@click.option("--listen", default="127.0.0.1:8080", show_default=True,
              help='HTTP endpoints (/webhook, /healthz, /readyz) address, "off" to disable.')
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="Where the Git clone and the applied-commit state live (default: a temp dir).")
@click.option("--webhook-secret-file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="File with the push webhook secret: /webhook then requires a valid GitHub signature "
                   "(X-Hub-Signature-256) or GitLab token. Without it any POST triggers a poll.")
@click.option("--wave-soak", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Seconds a wave must have been Ready before the next wave of the app starts "
                   "(a cluster's gitops-kd.io/wave-soak-seconds annotation overrides it).")
@click.option("--drift-policy", type=click.Choice(["revert", "alert-only"]), default="revert", show_default=True,
              help="Out-of-band edits of owned fields: revert them (and alert), or only alert. A KDCluster/KDApp's "
                   "gitops-kd.io/drift-policy annotation overrides it.")
@click.option("--drift-webhook", default=None, help="Also POST drift alerts (JSON) to this http(s) URL.")
@click.option("--drift-ignore", type=click.Path(dir_okay=False, exists=True), default=None,
              help="YAML file of drift ignore rules (see docs/drift.md).")
@click.option("--leader-elect", is_flag=True,
              help="Reconcile only while holding the Lease --lease-name in --namespace (for several replicas).")
@click.option("--lease-name", default="gitops-kd", show_default=True)
@click.option("--log-level", default="info", show_default=True)
def command(repo: str, branch: str, kubeconfig: str | None, context: str | None, namespace: str,
            all_namespaces: bool, interval: float,
            listen: str, cache_dir: str | None, webhook_secret_file: str | None, wave_soak: float, drift_policy: str,
            drift_webhook: str | None, drift_ignore: str | None, leader_elect: bool, lease_name: str,
            log_level: str) -> None:
    """Run the controller until SIGINT/SIGTERM (a running step finishes first)."""
    from gitops_kd.controller import Controller
    from gitops_kd.controller.drift import drift_wiring
    from gitops_kd.server.metrics import ControllerMetrics

    setup_logging(log_level)
    address = parse_listen(listen)
    secret = None
    if webhook_secret_file:
        from gitops_kd.server.webhook import load_secret
        secret = load_secret(webhook_secret_file)
    api_client = load_api_client(kubeconfig, context)
    source = GitSource(repo_url(repo), branch, cache_dir, default_namespace=namespace)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    metrics = ControllerMetrics()
    drift = drift_wiring(api_client, metrics=metrics, policy=drift_policy, webhook_url=drift_webhook,
                         ignore_file=drift_ignore, wave_soak_seconds=wave_soak)
    controller = Controller(source, api_client, namespace=None if all_namespaces else namespace,
                            poll_interval=interval, listen=address, planner=drift.planner,
                            metrics=metrics, webhook_secret=secret, wave_soak_seconds=wave_soak)
    drift.attach(controller)
    elector = None
    lost = threading.Event()
    lease_lost = False
    try:
        if leader_elect:
            elector = _elector(api_client, namespace, lease_name, controller, metrics, lost)
            elector.start()
        else:
            _start(controller)
        while not stop.wait(1.0) and not lost.is_set():
            pass
        lease_lost = lost.is_set() and not stop.is_set()
        click.echo("gitops-kd: stopping (finishing the running action)", err=True)
    finally:
        controller.stop()
        if elector is not None:
            elector.stop()
        drift.close()
        source.close()
    if lease_lost:
        raise SystemExit("gitops-kd: lost the leader lease; exiting so a restart campaigns again")


def _start(controller: "Any") -> None:
    controller.start()
    if controller.http is not None:
        click.echo(f"gitops-kd: serving /webhook, /healthz, /readyz, /metrics on {controller.http.url}", err=True)


def _elector(api_client: kubernetes.client.ApiClient, namespace: str, name: str, controller: "Any", metrics: "Any",
             lost: threading.Event) -> "Any":
    """Start the controller when this replica leads; losing the lease ends the process (as controller-runtime)."""
    from gitops_kd.kube.leader import LeaderElector, default_identity

    def started() -> None:
        metrics.set_leader(True)
        threading.Thread(target=_start, args=(controller,), name="gitops-kd-start", daemon=True).start()

    def stopped() -> None:
        metrics.set_leader(False)
        lost.set()

    return LeaderElector(api_client, namespace=namespace, name=name, identity=default_identity(),
                         on_started_leading=started, on_stopped_leading=stopped)
