"""`gitops-kd run`: the controller — poll a Git repo and make the cluster match it, upgrading apps live."""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path

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
@click.option("--interval", type=float, default=30.0, show_default=True, help="Git poll interval in seconds.")
@click.option("--listen", default="127.0.0.1:8080", show_default=True,
              help='HTTP endpoints (/webhook, /healthz, /readyz) address, "off" to disable.')
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="Where the Git clone and the applied-commit state live (default: a temp dir).")
@click.option("--log-level", default="info", show_default=True)
def command(repo: str, branch: str, kubeconfig: str | None, context: str | None, namespace: str, interval: float,
            listen: str, cache_dir: str | None, log_level: str) -> None:
    """Run the controller until SIGINT/SIGTERM (a running step finishes first)."""
    from gitops_kd.controller import Controller

    setup_logging(log_level)
    address = parse_listen(listen)
    api_client = load_api_client(kubeconfig, context)
    source = GitSource(repo_url(repo), branch, cache_dir, default_namespace=namespace)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    controller = Controller(source, api_client, namespace=namespace, poll_interval=interval, listen=address)
    try:
        controller.start()
        if controller.http is not None:
            click.echo(f"gitops-kd: serving /webhook, /healthz, /readyz on {controller.http.url}", err=True)
        while not stop.wait(1.0):
            pass
        click.echo("gitops-kd: stopping (finishing the running action)", err=True)
    finally:
        controller.stop()
        source.close()
