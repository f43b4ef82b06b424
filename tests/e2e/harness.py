"""E2E harness: a cluster (the embedded one, or another Backend such as tests/real's), a file:// Git repo made
from repo-template, and in-process Controllers."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from kubernetes.client import ApiClient

from gitops_kd.controller import Manager, Options, build_manager
from gitops_kd.controller.options import LeaseOptions
from gitops_kd.controller.syncrequest import SyncRequests
from gitops_kd.execute.podexec import ExecResult, PodExec
from gitops_kd.source import GitSource
from gitops_kd.testing import pod_ready, wait_for
from kdsim import images
from kdsim.cluster import EmbeddedCluster
from kdsim.images import ImageBehavior
from kubeplumb.rest import RestClient
from tests.kdcluster import embedded_cluster
from tests.nodeimages.facts import HELLO_1, HELLO_2

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "repo-template"
KD = "kubedirector.hpe.com/v1beta1"
ROLLOUT = "gitops-kd.io/v1alpha1"
NS = "default"
CLUSTER_LABEL = "kubedirector.hpe.com/kdcluster"


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
            "PATH": "/usr/bin:/bin:/usr/local/bin",
            "HOME": str(repo),
        },
    )
    if out.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {out.stderr}")
    return out.stdout.strip()


def make_repo(path: Path) -> Path:
    shutil.copytree(TEMPLATE, path)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "hello 1.0.0")
    return path


class PodWatch:
    """Records, from a real watch on the API server, the order pods were deleted and the most pods of the
    cluster that were down (not Ready, terminating or missing) at once."""

    def __init__(self, rest: RestClient, cluster: str, expected: int, ns: str = NS) -> None:
        self.rest, self.cluster, self.expected, self.ns = rest, cluster, expected, ns
        self.deleted: list[tuple[str, str, float]] = []  # (pod name, role, monotonic time) in deletion order
        self.max_down = 0
        self._pods: dict[str, dict[str, Any]] = {}
        self._stream: Any = None
        listing = rest.list("v1", "pods", ns, label_selector=f"{CLUSTER_LABEL}={cluster}")
        for p in listing["items"]:
            self._pods[p["metadata"]["name"]] = p
        self._rv = listing["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _down(self) -> int:
        up = sum(1 for p in self._pods.values() if pod_ready(p) and not p["metadata"].get("deletionTimestamp"))
        return self.expected - up

    def _run(self) -> None:
        self._stream = self.rest.watch(
            "v1",
            "pods",
            self.ns,
            resource_version=self._rv,
            label_selector=f"{CLUSTER_LABEL}={self.cluster}",
            timeout_seconds=600,
        )
        for event in self._stream:
            obj = event.get("object") or {}
            if event.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
                continue
            name = obj["metadata"]["name"]
            old = self._pods.get(name)
            old_uid = (old or {}).get("metadata", {}).get("uid")
            terminating = obj["metadata"].get("deletionTimestamp") or event["type"] == "DELETED"
            was_terminating = old is not None and old["metadata"].get("deletionTimestamp")
            if terminating and not was_terminating and old_uid == obj["metadata"].get("uid"):
                self.deleted.append((name, obj["metadata"]["labels"].get("kubedirector.hpe.com/role", ""), time.monotonic()))
            if event["type"] == "DELETED":
                self._pods.pop(name, None)
            else:
                self._pods[name] = obj
            self.max_down = max(self.max_down, self._down())

    def stop(self) -> None:
        if self._stream is not None:
            self._stream.close()
        self._thread.join(5)


class WriteLog:
    """Records, from a real watch on the API server, every write to one resource in a namespace as
    (resourceVersion, object): the server's order of writes, whatever order the writers logged them in."""

    def __init__(self, rest: RestClient, api: str, plural: str, ns: str = NS) -> None:
        self.rest, self.api, self.plural, self.ns = rest, api, plural, ns
        self.writes: list[tuple[int, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._stream: Any = None
        self._rv = rest.list(api, plural, ns)["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._stream = self.rest.watch(self.api, self.plural, self.ns, resource_version=self._rv, timeout_seconds=600)
        for event in self._stream:
            obj = event.get("object") or {}
            if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                with self._lock:
                    self.writes.append((int(obj["metadata"]["resourceVersion"]), obj))

    def first(self, name: str, test: Any) -> int | None:
        """The resourceVersion of the first write to ``name`` whose object passes ``test`` (None: none yet)."""
        with self._lock:
            return next((rv for rv, obj in self.writes if obj["metadata"]["name"] == name and test(obj)), None)

    def stop(self) -> None:
        if self._stream is not None:
            self._stream.close()
        self._thread.join(5)


class Backend(Protocol):
    """Where a test's world runs: the namespace its clusters go to, the controller's identity, an admin's."""

    name: str
    ns: str
    kubeconfig: Path  # an admin's, for kubectl

    def api_client(self) -> ApiClient: ...  # the controller's identity

    def admin_api_client(self) -> ApiClient: ...

    def close(self) -> None: ...


class EmbeddedBackend:
    """The embedded cluster with its simulated controllers; the hello images in its node's image store."""

    name = "embedded"

    def __init__(
        self,
        folder: Path | None,
        *,
        kd_app_edits: str = "strict",
        pod_grace_cap: float = 1.0,
        kubedirector_user: str | None = None,
        load_balancer: bool = True,
    ) -> None:
        self.ns = NS
        self.cluster: EmbeddedCluster = embedded_cluster(
            folder,
            controllers=True,
            kd_app_edits=kd_app_edits,
            pod_grace_cap=pod_grace_cap,
            kubedirector_user=kubedirector_user,
            load_balancer=load_balancer,
        ).start()
        self.kubeconfig = self.cluster.kubeconfig
        add_hello_images(images.store_for(self.cluster))

    def api_client(self) -> ApiClient:
        return self.cluster.api_client()

    def admin_api_client(self) -> ApiClient:
        return self.cluster.api_client()

    def close(self) -> None:
        self.cluster.stop()


def add_hello_images(store: images.ImageStore) -> None:
    fast = ImageBehavior(ready_delay_seconds=0.1)
    store.add("gitops-kd/hello:1.0.0", HELLO_1, behavior=fast)
    store.add("gitops-kd/hello:2.0.0", HELLO_2, behavior=fast)


class E2E:
    """One test's world: cluster, repo, images; controllers started and stopped on demand."""

    def __init__(
        self,
        tmp: Path,
        *,
        kd_app_edits: str = "strict",
        backend: Backend | None = None,
        persist: bool = True,
        pod_grace_cap: float = 1.0,
        kubedirector_user: str | None = None,
        load_balancer: bool = True,
    ) -> None:
        """`backend`: where the world runs (default: a new embedded cluster). For the embedded one, `persist`
        keeps the cluster's store under tmp/cluster (saved after changes; False: in memory only, for worlds whose
        cluster is never restarted), `pod_grace_cap` is the most seconds a deleted pod terminates and
        `kubedirector_user` the user its KubeDirector writes as (default: the admin); `load_balancer` False: no
        load-balancer provider (LoadBalancer Services get no ingress)."""
        self.tmp = tmp
        embedded = (
            EmbeddedBackend(
                tmp / "cluster" if persist else None,
                kd_app_edits=kd_app_edits,
                pod_grace_cap=pod_grace_cap,
                kubedirector_user=kubedirector_user,
                load_balancer=load_balancer,
            )
            if backend is None
            else None
        )
        self.backend: Backend = backend or embedded  # type: ignore[assignment]
        self.cluster: EmbeddedCluster = embedded.cluster if embedded is not None else None  # type: ignore[assignment]
        self.ns = self.backend.ns
        self.repo = make_repo(tmp / "repo")
        self.rest = RestClient(self.backend.admin_api_client())
        self.controller: Manager | None = None
        self.requests: SyncRequests | None = None
        self.log: list[str] = []

    # -- controller ----------------------------------------------------------------------------------
    def start_controller(
        self,
        *,
        listen: tuple[str, int] | None = None,
        ui: Any = None,
        record: bool = False,
        poll_interval: float = 0.5,
        metrics: Any = None,
        source: GitSource | None = None,
        planner: Any = None,
        workers: int | None = None,
        drift_notifier: Any = None,
        owns: Any = None,
        **options: Any,
    ) -> Manager:
        """The controller `gitops-kd run` runs (build_manager: drift detection included), in process and without
        leader election; with `listen` (e.g. ("127.0.0.1", 0)) its HTTP endpoints too, with `ui` (a
        gitops_kd.server.ui.UiSettings) the web UI under /ui on them, and with `record` its instance record (the
        GitOpsKDSource <ns>/gitops-kd, as `run` keeps) and its `gitops-kd sync` requests; `metrics` (a
        gitops_kd.server.metrics.ControllerMetrics) is updated as `run` serves it on /metrics. `source` (default:
        the repo's main branch), `planner` (build_manager's seam: a planner that counts or holds calls),
        `drift_notifier` (instead of a webhook of Options.drift), `owns` (the work keys it reconciles, a shard's) and
        `workers` as given; further keyword arguments are Options fields."""
        if source is None:
            source = GitSource(f"file://{self.repo}", "main", self.tmp / "source-cache", default_namespace=self.ns)
        settings = Options(
            namespace=self.ns,
            scope=self.ns,
            poll_interval=poll_interval,
            listen=listen,
            ui=ui,
            workers=workers,
            record=record,
            metrics=False,
            sync_check_interval=0.2,
            lease=LeaseOptions(elect=False, name="gitops-kd"),
            **options,
        )
        self.controller = build_manager(
            settings,
            api_client=self.backend.api_client(),
            source=source,
            metrics=metrics,
            planner=planner,
            drift_notifier=drift_notifier,
            **({"owns": owns} if owns is not None else {}),
            on_action=lambda a, o: self.log.append(a.describe()),
        )
        self.controller.serve()
        self.requests = self.controller.requests
        return self.controller

    def stop_controller(self) -> None:
        self.requests = None
        if self.controller is not None:
            self.controller.close()
            self.controller.source.close()
            self.controller = None

    def close(self) -> None:
        self.stop_controller()
        self.backend.close()

    # -- git -----------------------------------------------------------------------------------------
    def commit(self, files: dict[str, str | None], message: str) -> str:
        for rel, text in files.items():
            path = self.repo / rel
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", message)
        if self.controller is not None:
            self.controller.trigger_poll()
        return git(self.repo, "rev-parse", "HEAD")

    def template(self, rel: str) -> str:
        return (TEMPLATE / rel).read_text()

    # -- cluster -------------------------------------------------------------------------------------
    def rollout(self, name: str = "hello-dev") -> dict[str, Any] | None:
        return self.rest.get_or_none(ROLLOUT, "kdrollouts", self.ns, name)

    def wait_ready_at(self, version: str, name: str = "hello-dev", timeout: float = 90) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            ro = self.rollout(name)
            status = (ro or {}).get("status") or {}
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ())
            return ro if ready and status.get("appVersion") == version else None

        return wait_for(f"KDRollout {name} Ready at {version}", probe, timeout)

    def wait_settled(self, timeout: float = 60) -> None:
        """Until the controller's last plan was empty and every pod of hello-dev is Ready."""

        def probe() -> bool:
            plan = self.controller.last_plan if self.controller is not None else None
            pods = self.pods()
            return plan is not None and plan.empty and len(pods) == 3 and all(pod_ready(p) for p in pods)

        wait_for("controller settled (empty plan, pods Ready)", probe, timeout)

    def pods(self, cluster: str = "hello-dev") -> list[dict[str, Any]]:
        return self.rest.list("v1", "pods", self.ns, label_selector=f"{CLUSTER_LABEL}={cluster}")["items"]

    def pods_by_role(self, cluster: str = "hello-dev") -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for p in self.pods(cluster):
            out.setdefault(p["metadata"]["labels"]["kubedirector.hpe.com/role"], []).append(p["metadata"]["name"])
        return {r: sorted(v) for r, v in out.items()}

    def exec(self, pod: str, command: list[str], timeout: float = 30) -> ExecResult:
        return PodExec(self.backend.api_client()).run(self.ns, pod, "app", command, timeout=timeout)

    def sh(self, pod: str, script: str) -> str:
        res = self.exec(pod, ["/bin/sh", "-c", script])
        assert res.exit_code == 0, f"{pod}: {script}: {res.tail()}"
        return res.stdout

    def kubectl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", "--kubeconfig", str(self.backend.kubeconfig), "-n", self.ns, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def hello_app(version: str = "2.0.0", *, upgrade: dict[str, Any] | None | bool = True, **spec_changes: Any) -> str:
    """examples/hello-2.0.0.yaml as YAML text with spec.version/image set, spec.upgrade replaced
    (True: keep the example's stanza, None: drop it) and other spec fields changed."""
    import yaml

    doc = yaml.safe_load((TEMPLATE / "examples" / "hello-2.0.0.yaml").read_text())
    doc["spec"]["version"] = version
    doc["spec"]["defaultImageRepoTag"] = f"gitops-kd/hello:{version}"
    if upgrade is None:
        doc["spec"].pop("upgrade", None)
    elif upgrade is not True:
        doc["spec"]["upgrade"] = upgrade
    doc["spec"].update(spec_changes)
    return yaml.safe_dump(doc, sort_keys=False)


def exec_unavailable(world: E2E, pod: str) -> str | None:
    """Why exec into KD's app container does not work on this embedded node, or None when it does."""
    res = world.exec(pod, ["/bin/sh", "-c", "true"])
    if res.exit_code == 0:
        return None
    return res.tail(400)
