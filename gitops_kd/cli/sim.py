"""`gitops-kd sim`: run the embedded cluster, or its simulated node or KubeDirector joined to any API server."""

from __future__ import annotations

import base64
import json
import logging
import shutil
import signal
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import yaml

from gitops_kd.cli.exits import CannotRun
from gitops_kd.crds import gitops_kd_crds

if TYPE_CHECKING:
    from kdsim.cluster import EmbeddedCluster

MISSING = (
    "the embedded cluster (package kdsim) is not installed; it ships with the source tree, not the "
    "controller image: pip install -e '.[sim]' in a checkout of gitops-kd"
)


@contextmanager
def _kdsim_installed() -> Iterator[None]:
    """Around a lazy import of kdsim: say how to install it when it is missing."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] in ("kdsim", "cryptography"):
            raise CannotRun(MISSING) from exc
        raise


@contextmanager
def _until_signal() -> Iterator[threading.Event]:
    """An Event set by SIGINT or SIGTERM while the block runs."""
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _log_level(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def _run_until_signal(start: Callable[[], Any], what: str, banner: Callable[[Any], str]) -> None:
    """Start a component, print its banner, run until SIGINT/SIGTERM, stop it."""
    with _until_signal() as stop:
        try:
            running = start()
        except ValueError as exc:
            raise CannotRun(str(exc)) from exc
        except Exception as exc:  # the API server refused, or a port was taken: say which component failed
            raise CannotRun(f"cannot start {what}: {exc}") from exc
        try:
            click.echo(banner(running))
            while not stop.wait(0.5):
                pass
        finally:
            running.stop()
    click.echo("stopped", err=True)


def embedded_cluster(state_dir: Path | None, **options: Any) -> EmbeddedCluster:
    """A (not yet started) embedded cluster with gitops-kd's KDRollout CRD installed beside KubeDirector's."""
    try:
        from kdsim.cluster import EmbeddedCluster
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] in ("kdsim", "cryptography"):
            raise CannotRun(MISSING) from exc
        raise
    return EmbeddedCluster(state_dir, crds=gitops_kd_crds(), **options)


@click.group("sim")
def command() -> None:
    """The embedded Kubernetes cluster (API server emulator, simulated controllers and kubelet)."""


@command.command("serve")
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Where the cluster state, TLS material and kubeconfig live (reused on restart).",
)
@click.option("--port", type=int, default=0, show_default=True, help="Port on 127.0.0.1 (0: ephemeral).")
@click.option(
    "--kubeconfig",
    "kubeconfig_copy",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the kubeconfig here.",
)
@click.option(
    "--controllers/--no-controllers",
    default=True,
    show_default=True,
    help="Run the simulated StatefulSet controller, kubelet and KubeDirector.",
)
@click.option("--http", "plain_http", is_flag=True, help="Serve plain HTTP instead of HTTPS.")
@click.option(
    "--kd-app-edits",
    type=click.Choice(["upgrade", "strict", "live-app-upgrade"]),
    default="strict",
    show_default=True,
    help="strict: stock KubeDirector's admission (spec edits and deletes of an app that clusters use are "
    "refused, a cluster's app is read-only); upgrade: admit every KubeDirectorApp edit (the relaxed "
    "check the seed's live upgrade proposed); live-app-upgrade: KubeDirector's live-app-upgrade "
    "branch (a cluster's app may switch under its rules; its CRDs).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log at INFO level.")
def serve(
    state_dir: Path,
    port: int,
    kubeconfig_copy: Path | None,
    controllers: bool,
    plain_http: bool,
    kd_app_edits: str,
    verbose: bool,
) -> None:
    """Serve the embedded cluster until Ctrl-C (or SIGTERM)."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    stop = threading.Event()
    cluster = embedded_cluster(state_dir, controllers=controllers, port=port, use_tls=not plain_http, kd_app_edits=kd_app_edits)
    try:
        cluster.start()
    except (OSError, RuntimeError) as exc:
        raise CannotRun(f"cannot serve on 127.0.0.1:{port}: {exc}") from exc
    except ValueError as exc:  # a corrupt saved state names its file
        raise CannotRun(str(exc)) from exc
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        path = cluster.kubeconfig
        if kubeconfig_copy is not None:
            kubeconfig_copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, kubeconfig_copy)
            kubeconfig_copy.chmod(0o600)
            path = kubeconfig_copy
        click.echo(f"API server: {cluster.url}")
        click.echo(f"kubeconfig: {path}")
        click.echo(f"try: kubectl --kubeconfig {path} get pods -A   (Ctrl-C stops)", err=True)
        while not stop.wait(0.5):
            pass
    finally:
        cluster.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo("stopped", err=True)


KUBECONFIG_HELP = "The API server to join (any: the embedded cluster, a real kube-apiserver, ...)."


@command.command("node")
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True, help=KUBECONFIG_HELP)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Pod sandboxes, claim volumes, images (ImageStore under images/) and the kubelet's cert.",
)
@click.option("--node-name", default="sim-node", show_default=True)
@click.option(
    "--address", default="127.0.0.1", show_default=True, help="The Node's InternalIP and where the kubelet endpoint listens."
)
@click.option(
    "--port",
    type=int,
    default=0,
    show_default=True,
    help="The kubelet endpoint's port (0: ephemeral); registered as daemonEndpoints.kubeletEndpoint.",
)
@click.option(
    "--tls-cert-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The kubelet's serving cert (PEM); without it a self-signed one, as a real kubelet makes.",
)
@click.option("--tls-private-key-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
@click.option(
    "--client-ca-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Serve only clients (the API server) with a cert from this CA.",
)
@click.option(
    "--bind-pending/--no-bind-pending",
    default=True,
    show_default=True,
    help="Bind pods no scheduler bound to this node (pods/binding). A real node never does; a control "
    "plane without a scheduler needs it.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log at INFO level.")
def node(
    kubeconfig: Path,
    state_dir: Path,
    node_name: str,
    address: str,
    port: int,
    tls_cert_file: Path | None,
    tls_private_key_file: Path | None,
    client_ca_file: Path | None,
    bind_pending: bool,
    verbose: bool,
) -> None:
    """Join a simulated node to the API server: it registers a Node on --address with its kubelet endpoint
    (/exec, /attach, /run, /containerLogs) and runs the pods bound to it, until Ctrl-C (or SIGTERM)."""
    if (tls_cert_file is None) != (tls_private_key_file is None):
        raise click.BadParameter("give both --tls-cert-file and --tls-private-key-file, or neither", param_hint="--tls-cert-file")
    _log_level(verbose)
    with _kdsim_installed():
        from kdsim import standalone
        from kdsim.kubelet.server import ServingTls
    serving = ServingTls(tls_cert_file, tls_private_key_file, client_ca_file)

    def start() -> Any:
        api_client = standalone.api_client_from(kubeconfig)
        return standalone.SimNode(
            api_client, state_dir, name=node_name, address=address, port=port, serving=serving, bind_pending=bind_pending
        ).start()

    _run_until_signal(start, f"node {node_name}", lambda n: f"node {node_name} registered; kubelet endpoint: {n.endpoint}")


@command.command("kubedirector")
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True, help=KUBECONFIG_HELP)
@click.option(
    "--install-crds/--no-install-crds",
    default=True,
    show_default=True,
    help="Create KubeDirector's CRDs where missing (and wait until they are Established).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log at INFO level.")
def kubedirector(kubeconfig: Path, install_crds: bool, verbose: bool) -> None:
    """Run the simulated KubeDirector against the API server: KubeDirectorClusters become StatefulSets,
    Services and status, as in the embedded cluster, until Ctrl-C (or SIGTERM)."""
    _log_level(verbose)
    with _kdsim_installed():
        from kdsim import standalone

    def start() -> Any:
        return standalone.SimKubeDirector(standalone.api_client_from(kubeconfig), install_crds=install_crds).start()

    _run_until_signal(start, "kubedirector", lambda _k: "kubedirector running")


def _post(kubeconfig: Path, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST JSON to the cluster named by a kubeconfig written by `sim serve`."""
    try:
        config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
        cluster = config["clusters"][0]["cluster"]
        token = config["users"][0]["user"].get("token", "")
        server = str(cluster["server"])
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError) as exc:
        raise CannotRun(f"{kubeconfig}: not a kubeconfig written by `gitops-kd sim serve` ({exc})") from exc
    ctx = None
    if server.startswith("https"):
        ca = base64.b64decode(cluster.get("certificate-authority-data", "")).decode()
        ctx = ssl.create_default_context(cadata=ca)
    req = urllib.request.Request(
        server + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return dict(json.loads(resp.read()))
    except urllib.error.HTTPError as err:
        raise CannotRun(json.loads(err.read()).get("message", str(err))) from err
    except urllib.error.URLError as err:
        raise CannotRun(f"{server}: {err.reason}") from err


@command.command("fault")
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option(
    "--kind",
    type=click.Choice(["error", "conflict", "timeout", "lost"]),
    default="error",
    show_default=True,
    help="error: 500; conflict: 409; timeout: wait --delay seconds, then 504; lost: carry the request out, "
    "then 504 after --delay seconds (an exec runs, then its connection drops).",
)
@click.option("--verb", default="*", show_default=True, help="get, list, watch, create, update, patch, delete, ...")
@click.option("--resource", default="*", show_default=True, help="Plural, or plural/subresource.")
@click.option("--count", type=int, default=1, show_default=True)
@click.option("--delay", type=float, default=1.0, show_default=True)
@click.option("--drop-watches", is_flag=True, help="Instead: close every open watch.")
@click.option("--clear", is_flag=True, help="Instead: remove every pending fault.")
def fault(
    kubeconfig: Path, kind: str, verb: str, resource: str, count: int, delay: float, drop_watches: bool, clear: bool
) -> None:
    """Inject a fault into a running embedded cluster (POST /sim/faults)."""
    if drop_watches:
        body: dict[str, Any] = {"action": "drop-watches"}
    elif clear:
        body = {"action": "clear"}
    else:
        body = {"action": "add", "kind": kind, "verb": verb, "resource": resource, "count": count, "delay": delay}
    click.echo(json.dumps(_post(kubeconfig, "/sim/faults", body)))
