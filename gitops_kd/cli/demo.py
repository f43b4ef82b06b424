"""`gitops-kd demo`: the hello app upgraded live from 1.0.0 to 2.0.0 by a Git commit, on an embedded cluster."""

from __future__ import annotations

import logging
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from gitops_kd.cli.exits import CannotRun
from gitops_kd.constants import ROLLOUT_API_VERSION, ROLLOUT_PLURAL
from gitops_kd.controller.scope import DEFAULT_LEASE
from gitops_kd.kd.layout import CLUSTER_LABEL, ROLE_LABEL
from gitops_kd.rollout.model import PodProgress, RolloutStatus
from kubeplumb.rest import RestClient

log = logging.getLogger(__name__)

NS = "default"
CLUSTER = "hello-dev"
SELECTOR = f"{CLUSTER_LABEL}={CLUSTER}"
# The two image versions: different files under the persisted dirs, so data handling shows.
IMAGES = {
    "gitops-kd/hello:1.0.0": {
        "/etc/hello/version": "1.0.0\n",
        "/var/lib/hello/data": "data of 1.0.0\n",
        "/opt/hello/cache/index": "cache built by 1.0.0\n",
    },
    "gitops-kd/hello:2.0.0": {
        "/etc/hello/version": "2.0.0\n",
        "/var/lib/hello/data": "data of 2.0.0\n",
        "/var/lib/hello/new-in-2": "added in 2.0.0\n",
        "/opt/hello/cache/index": "cache built by 2.0.0\n",
    },
}


def default_template() -> Path:
    return Path(__file__).resolve().parents[2] / "repo-template"


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "gitops-kd demo",
        "GIT_AUTHOR_EMAIL": "demo@gitops-kd.invalid",
        "GIT_COMMITTER_NAME": "gitops-kd demo",
        "GIT_COMMITTER_EMAIL": "demo@gitops-kd.invalid",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(repo),
    }
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, timeout=60)
    if done.returncode != 0:
        raise CannotRun(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def make_repo(template: Path, target: Path) -> Path:
    shutil.copytree(template, target)
    _git(target, "init", "-q", "-b", "main")
    _git(target, "add", "-A")
    _git(target, "commit", "-q", "-m", "hello 1.0.0 and the hello-dev cluster")
    return target


def _ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or ())


# Said of the cluster the demo itself just created: KubeDirector built it from gitops-kd's apply, so gitops-kd's
# template patch (its init container, for the next upgrade) is part of the first deploy.
FIRST_DEPLOY = {
    "TemplateUpdated": (
        "TemplatePrepared",
        "{object}: gitops-kd's upgrade init container added to the pod template (used from the next upgrade; no pod restarted)",
    )
}
RESOURCES = "kdrollouts,kubedirectorclusters,statefulsets,pods,services"


def plain_console() -> Console:
    """A console for a terminal; for a pipe or CI log, plain text lines that are never cut or wrapped."""
    console = Console()
    if console.is_terminal:
        return console
    return Console(width=250, soft_wrap=True, no_color=True, highlight=False, emoji=False)


class Progress:
    """Reads pods, member Services, the KDRollout and Events from the API; renders them with rich."""

    def __init__(self, rest: RestClient, console: Console) -> None:
        self.rest, self.console = rest, console
        self._seen_events: set[str] = set()
        self.first_deploy = True  # events of the deploy phase are about a cluster the demo created

    def rollout(self) -> dict[str, Any]:
        return self.rest.get_or_none(ROLLOUT_API_VERSION, ROLLOUT_PLURAL, NS, CLUSTER) or {}

    def ready_at(self, version: str) -> bool:
        status = RolloutStatus.from_obj(self.rollout().get("status"))
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.conditions)
        pods = self.rest.list("v1", "pods", NS, label_selector=SELECTOR)["items"]
        return ready and status.app_version == version and len(pods) == 3 and all(map(_ready, pods))

    def print_new_events(self) -> None:
        items = sorted(self.rest.list("v1", "events", NS)["items"], key=lambda e: e["metadata"]["name"])
        items.sort(key=lambda e: (e.get("lastTimestamp") or "", int(e["metadata"].get("resourceVersion") or 0)))
        for e in items:
            uid = e["metadata"].get("uid") or e["metadata"]["name"]
            if uid in self._seen_events or e.get("source", {}).get("component") != "gitops-kd":
                continue
            self._seen_events.add(uid)
            style = "yellow" if e.get("type") == "Warning" else "cyan"
            reason, message = e["reason"], str(e.get("message", ""))
            if self.first_deploy and reason in FIRST_DEPLOY:
                reason, text = FIRST_DEPLOY[reason]
                message = text.format(object=message.split(":", 1)[0])
            self.console.print(f"[{style}]{reason:<20}[/] {escape(message)}", highlight=False, soft_wrap=True)

    def table(self, title: str) -> Table:
        status = RolloutStatus.from_obj(self.rollout().get("status"))
        spec = self.rollout().get("spec") or {}
        live, target = status.app_version or "-", spec.get("targetVersion") or "-"
        versions = live if live == target else f"{live} → {target}"
        parts = [title, f"KDRollout {CLUSTER}: {status.phase or 'not created yet'} {versions}"]
        if status.step:
            parts.append(escape(status.step))
        table = Table(title="  ·  ".join(parts), title_justify="left", box=box.HEAVY_HEAD if self.console.is_terminal else None)
        for col in ("pod", "role", "image", "ready", "hook", "gate", "service ports"):
            table.add_column(col)
        ports: dict[str, str] = {}
        for svc in self.rest.list("v1", "services", NS, label_selector=SELECTOR)["items"]:
            pod = ((svc.get("spec") or {}).get("selector") or {}).get("statefulset.kubernetes.io/pod-name")
            if pod:
                ports[pod] = ",".join(str(p["port"]) for p in svc["spec"].get("ports") or ())
        progress = status.pods
        pods = self.rest.list("v1", "pods", NS, label_selector=SELECTOR)["items"]
        for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
            name = pod["metadata"]["name"]
            mark = progress.get(name) or PodProgress()
            table.add_row(
                name,
                pod["metadata"]["labels"].get(ROLE_LABEL, ""),
                pod["spec"]["containers"][0]["image"].rsplit(":", 1)[-1],
                "[red]terminating[/]"
                if pod["metadata"].get("deletionTimestamp")
                else ("[green]Ready[/]" if _ready(pod) else "[yellow]starting[/]"),
                "done" if mark.hook_done else "",
                "passed" if mark.gate_passed else "",
                ports.get(name, "-"),
            )
        return table


def _wait(progress: Progress, live: Live, title: str, version: str, timeout: float, settled: Callable[[], bool]) -> None:
    """Refresh the view until hello-dev is Ready at `version` and the controller has nothing left to do."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        progress.print_new_events()
        live.update(progress.table(title))
        if settled() and progress.ready_at(version):
            progress.print_new_events()
            live.update(progress.table(title))
            return
        time.sleep(0.25)
    raise CannotRun(f"hello-dev did not reach {version} within {timeout:.0f}s; see the events above")


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the cluster and controller running afterwards (Ctrl-C stops).")
@click.option(
    "--template",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The repo-template folder to start from (default: the one beside the package).",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the cluster, repo and kubeconfig go (default: a new temp dir).",
)
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds allowed per phase.")
@click.option(
    "--listen",
    default="127.0.0.1:8080",
    show_default=True,
    help='Address of the controller\'s endpoints and web UI (/ui); a busy port falls back to a free one; "off" for none.',
)
def command(keep: bool, template: Path | None, state_dir: Path | None, timeout: float, listen: str) -> None:
    """Start an embedded cluster, deploy hello 1.0.0 from Git, then commit 2.0.0 and watch the live upgrade
    (also in the web UI at http://127.0.0.1:8080/ui/ by default)."""
    from gitops_kd.cli.run import parse_listen
    from gitops_kd.cli.sim import embedded_cluster
    from gitops_kd.controller import Options, build_manager
    from gitops_kd.controller.options import LeaseOptions
    from gitops_kd.execute.podexec import PodExec
    from gitops_kd.server.ui import UiSettings
    from gitops_kd.source import GitSource

    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    console = plain_console()
    template = template or default_template()
    if not (template / "apps" / "hello.yaml").is_file():
        raise CannotRun(f"{template}: not a repo-template folder (no apps/hello.yaml); pass --template")
    base = state_dir or Path(tempfile.mkdtemp(prefix="gitops-kd-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    cluster = embedded_cluster(base / "cluster", controllers=True).start()
    from kdsim import images  # installed: embedded_cluster said so
    from kdsim.images import ImageBehavior

    controller = None
    try:
        store = images.store_for(cluster)
        for ref, files in IMAGES.items():
            store.add(ref, files, behavior=ImageBehavior(ready_delay_seconds=0.3))
        repo = make_repo(template, base / "repo")
        console.print(f"[bold]embedded cluster[/] at {cluster.url}; Git repo {repo}")
        source = GitSource(f"file://{repo}", "main", base / "source-cache")
        address = _free_or_any(parse_listen(listen))
        # as `run` (build_manager): drift detection, /metrics beside /ui, the GitOpsKDSource (applied revision and
        # head for `gitops-kd status`, requests of `gitops-kd sync`); one replica, no leader election
        options = Options(
            namespace=NS,
            scope=NS,
            poll_interval=1.0,
            listen=address,
            ui=UiSettings(refresh_seconds=1.0),
            lease=LeaseOptions(elect=False, name=DEFAULT_LEASE),
        )
        controller = build_manager(options, api_client=cluster.api_client(), source=source)
        controller.serve()
        if controller.http is not None:
            console.print(f"[bold]web UI[/] (read-only, live): {controller.http.url}/ui/  metrics: {controller.http.url}/metrics")
        rest = RestClient(cluster.api_client())
        progress = Progress(rest, console)

        def settled() -> bool:
            plan = controller.last_plan if controller is not None else None
            return plan is not None and plan.empty

        with Live(console=console, refresh_per_second=8, transient=False) as live:
            _wait(progress, live, "deploying hello 1.0.0", "1.0.0", timeout, settled)
        console.print()
        progress.first_deploy = False
        console.print("[bold]committing[/] examples/hello-2.0.0.yaml over apps/hello.yaml")
        shutil.copyfile(repo / "examples" / "hello-2.0.0.yaml", repo / "apps" / "hello.yaml")
        _git(repo, "commit", "-q", "-am", "hello 2.0.0")
        controller.trigger_poll()
        with Live(console=console, refresh_per_second=8, transient=False) as live:
            _wait(progress, live, "upgrading hello to 2.0.0", "2.0.0", timeout, settled)
        console.print()
        _show_result(console, rest, PodExec(cluster.api_client()))
        console.print(f"[bold green]done[/] in {time.monotonic() - started:.1f}s")
        if keep:
            console.print(f"kubeconfig:   {cluster.kubeconfig}", soft_wrap=True)
            console.print(f"look around:  kubectl --kubeconfig {cluster.kubeconfig} get {RESOURCES}", soft_wrap=True)
            me = self_command()
            console.print(f"              {me} status --kubeconfig {cluster.kubeconfig}", soft_wrap=True)
            console.print(f"              {me} sync -n {NS} --kubeconfig {cluster.kubeconfig}", soft_wrap=True)
            if controller.http is not None:
                console.print(f"web UI:       {controller.http.url}/ui/  (fleet, cluster hello-dev, history of hello)")
            console.print(
                f"see drift reverted: kubectl --kubeconfig {cluster.kubeconfig} edit kdcluster hello-dev", soft_wrap=True
            )
            console.print("serving until Ctrl-C ...")
            _serve(progress)
        else:
            console.print(
                "(the cluster stops now"
                + ("" if state_dir else " and its files are removed")
                + "; run with --keep to look around with kubectl and the web UI)"
            )
    finally:
        if controller is not None:
            controller.close()
            controller.source.close()
        cluster.stop()
        if state_dir is None:
            shutil.rmtree(base, ignore_errors=True)


def self_command() -> str:
    """How to run this gitops-kd from a shell: `gitops-kd` when PATH finds this one, else its full path (a
    virtualenv's bin is usually not on PATH)."""
    here = Path(sys.executable).parent / "gitops-kd"
    found = shutil.which("gitops-kd")
    if not here.exists() or (found is not None and Path(found).resolve() == here.resolve()):
        return "gitops-kd"
    return str(here)


def _serve(progress: Progress) -> None:
    """Print the controller's new events (DriftDetected, DriftReverted, ...) until Ctrl-C or SIGTERM."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(1.0):
            try:
                progress.print_new_events()
            except Exception as exc:  # noqa: BLE001 - a failed read is retried the next second; the demo goes on
                log.warning("reading events failed: %s", exc)
    except KeyboardInterrupt:
        pass


def _free_or_any(address: tuple[str, int] | None) -> tuple[str, int] | None:
    """The address, or the same host with port 0 (a free port) when something already listens there."""
    import socket

    if address is None or address[1] == 0:
        return address
    with socket.socket() as probe:
        try:
            probe.bind(address)
        except OSError:
            return address[0], 0
    return address


def _show_result(console: Console, rest: RestClient, pod_exec: Any) -> None:
    """What the upgrade did inside each member: hook output and the data rules' effect."""
    table = Table(
        title="inside the members after the upgrade", title_justify="left", box=box.HEAVY_HEAD if console.is_terminal else None
    )
    for col in ("pod", "upgrade.log (hook)", "/etc/hello/version (keep)", "cache (discard)", "schema (migrate)"):
        table.add_column(col)
    for pod in sorted(p["metadata"]["name"] for p in rest.list("v1", "pods", NS, label_selector=SELECTOR)["items"]):
        cells = []
        for path in (
            "/var/lib/hello/upgrade.log",
            "/etc/hello/version",
            "/opt/hello/cache/index",
            "/var/lib/hello/schema-version",
        ):
            res = pod_exec.run(NS, pod, "app", ["cat", path], timeout=10)
            cells.append(escape(res.stdout.strip()) if res.ok else f"[red]{escape(res.tail(60))}[/]")
        table.add_row(pod, *cells)
    console.print(table)
