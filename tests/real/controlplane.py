"""ControlPlane: etcd, a real kube-apiserver and kube-controller-manager on free loopback ports, torn down fully."""

from __future__ import annotations

import atexit
import base64
import ctypes
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from kubernetes import client, config

from gitops_kd.crds import KDROLLOUT_CRD, SOURCE_CRD
from gitops_kd.testing import wait_for
from kdcrds import KDAPP_CRD, KDCLUSTER_CRD
from kubeplumb.rest import RestClient
from tests.real.kubeconfig import write_kubeconfig
from tests.real.pki import Pki, make_pki

ROOT = Path(__file__).resolve().parents[2]
CRD_FILES = [
    *(ROOT / "kdcrds" / name for name in (KDAPP_CRD, KDCLUSTER_CRD)),
    *(ROOT / "gitops_kd" / "crds" / name for name in (KDROLLOUT_CRD, SOURCE_CRD)),
]
"""The packaged CRDs' files (for kubectl apply -f), KubeDirector's first."""
CONTROLLERS = "serviceaccount-token,serviceaccount,statefulset,garbagecollector,pvc-protection,namespace"
PV_BINDER = "persistentvolume-binder"  # binds claims to volumes: added where a real node runs pods (no simulated binder)
SERVICE_CIDR = "10.96.0.0/12"
ISSUER = "https://kubernetes.default.svc.cluster.local"
GITOPS_KD_USER = "system:serviceaccount:gitops-kd-system:gitops-kd"  # deploy/serviceaccount.yaml
PR_SET_PDEATHSIG = 1  # linux/prctl.h
AUDIT_POLICY = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"


class ControlPlaneError(RuntimeError):
    """A step of fetching, building or starting the control plane failed; the message names it and its log."""


BIN_ENV = "REALK8S_BIN"  # a folder with kube-apiserver, kube-controller-manager and etcd of another version
VERSION_ENV = "REALK8S_VERSION"  # the version scripts/realk8s builds (v1.20.2 from Debian, v1.3x from the Go proxy)
NAMES = ("kube-apiserver", "kube-controller-manager", "etcd")
BUILT_VERSION = "v1.20.2"  # what scripts/realk8s builds when $REALK8S_VERSION is unset
NO_INSECURE_PORT_MINOR = 24  # kube-apiserver --insecure-port and kube-controller-manager --port removed
NO_TOKEN_SECRET_MINOR = 24  # no token Secret is made for a new ServiceAccount (LegacyServiceAccountTokenNoAutoGeneration)
ROOT_CA_CONFIGMAP_MINOR = 22  # bound service account tokens: pods mount the kube-root-ca.crt ConfigMap
VAP_STATUS_MINOR = 30  # ValidatingAdmissionPolicy GA; its status (type checking) is written by a controller-manager controller


def wanted_version() -> str:
    """The version scripts/realk8s is asked for: $REALK8S_VERSION, else v1.20.2."""
    return os.environ.get(VERSION_ENV) or BUILT_VERSION


def binaries(*, show_progress: bool = False) -> dict[str, Path]:
    """Paths of kube-apiserver, kube-controller-manager and etcd: from the folder $REALK8S_BIN when set, else from
    scripts/realk8s $REALK8S_VERSION (builds once, then cached). show_progress: its messages go straight to
    stderr as they come (else into the error, if it fails)."""
    if os.environ.get(BIN_ENV):
        found = {name: Path(os.environ[BIN_ENV]) / name for name in NAMES}
        missing = [str(path) for path in found.values() if not os.access(path, os.X_OK)]
        if missing:
            raise ControlPlaneError(f"${BIN_ENV}: no executable {', '.join(missing)}")
        return found
    done = subprocess.run(
        [str(ROOT / "scripts" / "realk8s"), wanted_version()],
        stdout=subprocess.PIPE,
        text=True,
        stderr=None if show_progress else subprocess.PIPE,
    )
    if done.returncode != 0:
        raise ControlPlaneError(f"scripts/realk8s failed: {(done.stderr or 'see its messages above').strip()}")
    found = {k: Path(v) for k, v in (line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)}
    return found


def binary_version(kube_apiserver: Path) -> str:
    """What `kube-apiserver --version` says (e.g. v1.36.3); "" when it says nothing (not a kube-apiserver)."""
    said = subprocess.run([str(kube_apiserver), "--version"], capture_output=True, text=True, timeout=60).stdout
    found = re.search(r"^Kubernetes (v\d+\.\d+\.\d+\S*)", said)
    return found.group(1) if found else ""


def minor(version: str) -> int:
    """The minor of a version such as v1.36.3 (36)."""
    return int(version.lstrip("v").split(".")[1])


def expected_version() -> str:
    """The version the API server must report: the one scripts/realk8s was asked for, else what $REALK8S_BIN's
    kube-apiserver --version says."""
    if not os.environ.get(BIN_ENV):
        return wanted_version()
    return binary_version(binaries()["kube-apiserver"])


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def die_with_parent() -> None:
    """In a child before exec (Popen's preexec_fn): the kernel SIGKILLs it when the test process dies, however
    it dies (a CI job cancelled, a SIGKILL), so no etcd or API server outlives the tests (Linux prctl)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class _Process:
    """One child in its own process group, its output in `log`; it dies with the test process."""

    def __init__(self, name: str, argv: list[str], log: Path, env: Mapping[str, str] | None = None) -> None:
        self.name, self.log = name, log
        with log.open("wb") as out:
            self.popen = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent,
                env=env,
            )

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            raise ControlPlaneError(
                f"{self.name} exited with {self.popen.returncode} while starting; log {self.log}:\n{_tail(self.log)}"
            )

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the group, SIGKILL it after `grace` seconds; returns once the process is reaped."""
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        try:  # anything left in the group (none of these fork, but make sure)
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class ControlPlane:
    """Start with `with ControlPlane(folder) as cp:`; every process is gone on exit, also when start fails."""

    def __init__(self, workdir: Path, bins: Mapping[str, Path] | None = None, *, controllers: str = CONTROLLERS) -> None:
        """``controllers``: kube-controller-manager's --controllers."""
        self.workdir = workdir
        self.base_controllers = controllers
        self.bins = dict(bins) if bins is not None else None
        self.procs: list[_Process] = []
        self.pids: dict[str, int] = {}  # every process ever started, by name (for checks after stop)
        self.port = 0
        self.kubeconfig = workdir / "admin.kubeconfig"
        self.audit_log = workdir / "audit.log"
        self.pki: Pki | None = None
        self.start_seconds = 0.0
        self.version = ""  # what kube-apiserver --version says, once started

    @property
    def minor(self) -> int:
        """The API server's minor version (20 for v1.20.2)."""
        return minor(self.version)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def __enter__(self) -> ControlPlane:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        bins = self.bins if self.bins is not None else binaries()
        began = time.monotonic()
        self.version = binary_version(bins["kube-apiserver"]) or wanted_version()  # (a stand-in that fails to start)
        legacy_ports = self.minor < NO_INSECURE_PORT_MINOR
        atexit.register(self.stop)
        self.workdir.mkdir(parents=True, exist_ok=True)
        pki = self.pki = make_pki(self.workdir / "pki")
        etcd_port, peer_port, self.port = free_port(), free_port(), free_port()
        etcd = f"http://127.0.0.1:{etcd_port}"
        self._spawn(
            "etcd",
            [
                str(bins["etcd"]),
                "--name",
                "etcd0",
                "--data-dir",
                str(self.workdir / "etcd"),
                "--listen-client-urls",
                etcd,
                "--advertise-client-urls",
                etcd,
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-cluster",
                f"etcd0=http://127.0.0.1:{peer_port}",
            ],
        )
        self._wait("etcd healthy", lambda: b'"true"' in _http_get(f"{etcd}/health"), 60)
        policy = self.workdir / "audit-policy.yaml"
        policy.write_text(AUDIT_POLICY)
        self._spawn(
            "kube-apiserver",
            [
                str(bins["kube-apiserver"]),
                f"--etcd-servers={etcd}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.port}",
                *(["--insecure-port=0"] if legacy_ports else []),
                "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                f"--tls-cert-file={pki.apiserver.cert}",
                f"--tls-private-key-file={pki.apiserver.key}",
                f"--client-ca-file={pki.ca.cert}",
                "--authorization-mode=RBAC",
                f"--service-account-key-file={pki.sa_pub}",
                f"--service-account-signing-key-file={pki.sa_key}",
                f"--service-account-issuer={ISSUER}",
                f"--api-audiences={ISSUER}",
                f"--kubelet-client-certificate={pki.kubelet_client.cert}",
                f"--kubelet-client-key={pki.kubelet_client.key}",
                f"--kubelet-certificate-authority={pki.ca.cert}",
                "--kubelet-preferred-address-types=InternalIP",
                "--allow-privileged=true",
                # admission webhooks are called at their Service's Endpoints (no cluster IP routing on loopback)
                "--enable-aggregator-routing=true",
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log}",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                # podtemplates bypass the watch cache and etcd is compacted often, so a watch from an old
                # resourceVersion meets 410 Gone within seconds (tests/real/diffcases.py)
                "--watch-cache-sizes=podtemplates#0",
                "--etcd-compaction-interval=5s",
            ],
        )
        write_kubeconfig(self.kubeconfig, self.server, pki.ca.cert, cert=pki.admin.cert, key=pki.admin.key)
        self._wait("kube-apiserver /readyz", self._ready, 180)
        kcm_config = write_kubeconfig(
            self.workdir / "controller-manager.kubeconfig",
            self.server,
            pki.ca.cert,
            cert=pki.controller_manager.cert,
            key=pki.controller_manager.key,
        )
        self._spawn(
            "kube-controller-manager",
            [
                str(bins["kube-controller-manager"]),
                f"--kubeconfig={kcm_config}",
                *(["--port=0"] if legacy_ports else []),
                "--secure-port=0",
                "--leader-elect=false",
                f"--controllers={self.controllers()}",
                f"--service-account-private-key-file={pki.sa_key}",
                f"--root-ca-file={pki.ca.cert}",
                "--use-service-account-credentials=true",
            ],
        )
        core = client.CoreV1Api(self.api_client())
        if self.minor < NO_TOKEN_SECRET_MINOR:
            self._wait(
                "the default ServiceAccount's token (controller-manager running)",
                lambda: any(
                    s.type == "kubernetes.io/service-account-token" for s in core.list_namespaced_secret("default").items
                ),
                120,
            )
        else:  # no token Secret since 1.24: the serviceaccount controller's default ServiceAccount says it runs
            self._wait(
                "the default ServiceAccount in kube-system (controller-manager running)",
                lambda: bool(core.list_namespaced_service_account("kube-system", field_selector="metadata.name=default").items),
                120,
            )
        self.start_seconds = time.monotonic() - began

    def controllers(self) -> str:
        """kube-controller-manager's --controllers: CONTROLLERS, the kube-root-ca.crt publisher where pods mount it
        (bound tokens, 1.22+), and the ValidatingAdmissionPolicy status (type checking) controller (1.30+)."""
        extra = [
            *(["root-ca-cert-publisher"] if self.minor >= ROOT_CA_CONFIGMAP_MINOR else []),
            *(["validatingadmissionpolicy-status-controller"] if self.minor >= VAP_STATUS_MINOR else []),
        ]
        return ",".join([self.base_controllers, *extra])

    def default_service_account_ready(self, rest: RestClient, namespace: str) -> bool:
        """Whether ServiceAccount admission takes pods in ``namespace``: its default ServiceAccount exists and, before
        1.24, has its token Secret."""
        sa = rest.get_or_none("v1", "serviceaccounts", namespace, "default")
        return bool(sa and (sa.get("secrets") or self.minor >= NO_TOKEN_SECRET_MINOR))

    def service_account_token(self, namespace: str, name: str) -> str:
        """A long-lived token of ServiceAccount ``namespace/name`` on any version: a Secret of type
        service-account-token annotated with the account, which the token controller fills (on 1.20 as on 1.3x;
        since 1.24 none is made by itself)."""
        core = client.CoreV1Api(self.api_client())
        secret = f"{name}-token-gitops-kd-tests"
        core.create_namespaced_secret(
            namespace,
            {
                "metadata": {"name": secret, "annotations": {"kubernetes.io/service-account.name": name}},
                "type": "kubernetes.io/service-account-token",
            },
        )

        def token() -> str | None:
            data = core.read_namespaced_secret(secret, namespace).data or {}
            return base64.b64decode(data["token"]).decode() if "token" in data else None

        return wait_for(f"the token of ServiceAccount {namespace}/{name}", token, 60)

    def stop(self) -> None:
        """Stop kube-controller-manager, kube-apiserver, etcd (reverse order); idempotent."""
        while self.procs:
            self.procs.pop().stop()

    def api_client(self) -> client.ApiClient:
        """A new `kubernetes` ApiClient as the admin (system:masters)."""
        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def kubectl(
        self, *args: str, stdin: str | None = None, kubeconfig: Path | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against this control plane (admin unless `kubeconfig` is given)."""
        argv = [
            "kubectl",
            f"--kubeconfig={kubeconfig or self.kubeconfig}",
            f"--cache-dir={self.workdir / 'kubectl-cache'}",
            *args,
        ]  # not ~/.kube/cache
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}): {done.stderr}")
        return done

    def audit_events(self) -> list[dict[str, Any]]:
        """Every audit event written so far (one JSON object a line)."""
        if not self.audit_log.exists():
            return []
        return [json.loads(line) for line in self.audit_log.read_text().splitlines() if line.strip()]

    def forbidden(self, username: str, namespace: str) -> list[dict[str, Any]]:
        """The audit log's 403 answers to `username` for objects in `namespace`."""
        return [
            e
            for e in self.audit_events()
            if (e.get("user") or {}).get("username") == username
            and (e.get("responseStatus") or {}).get("code") == 403
            and (e.get("objectRef") or {}).get("namespace") == namespace
        ]

    def _spawn(self, name: str, argv: list[str]) -> None:
        proc = _Process(name, argv, self.workdir / f"{name}.log")
        self.procs.append(proc)
        self.pids[name] = proc.popen.pid

    def ssl_context(self) -> ssl.SSLContext:
        """TLS as the admin: trusts the cluster CA, presents the admin client cert."""
        assert self.pki is not None, "start() first"
        ctx = ssl.create_default_context(cafile=str(self.pki.ca.cert))
        ctx.load_cert_chain(str(self.pki.admin.cert), str(self.pki.admin.key))
        return ctx

    def _ready(self) -> bool:
        return _http_get(f"{self.server}/readyz", self.ssl_context()) == b"ok"

    def _wait(self, what: str, probe: Callable[[], bool], timeout: float) -> None:
        """Poll `probe` until true; fail early if a child died, or after `timeout` s naming the last log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.procs:
                proc.check_alive()
            try:
                if probe():
                    return
            except Exception:  # not up yet: refused, 403 before RBAC bootstrap, 5xx while starting
                pass
            time.sleep(0.2)
        last = self.procs[-1]
        raise ControlPlaneError(f"timed out after {timeout}s waiting for {what}; log {last.log}:\n{_tail(last.log)}")


def _http_get(url: str, ctx: ssl.SSLContext | None = None) -> bytes:
    with urllib.request.urlopen(url, timeout=5, context=ctx) as answer:
        return bytes(answer.read())
