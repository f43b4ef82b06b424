"""The real KubeDirector operator (built by scripts/realkd) run out of cluster against a ControlPlane: its own CRDs,
RBAC (as its ServiceAccount) and admission webhook, in a private mount namespace that holds the files it reads
from a pod's filesystem (shared/realkd/README.md)."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from gitops_kd.testing import wait_for
from kubeplumb.rest import RestClient
from tests.real.controlplane import ROOT, ControlPlane, ControlPlaneError, _Process
from tests.real.kubeconfig import write_kubeconfig

FLAVOURS = {"kd": "master", "kd-upgrade": "live-app-upgrade", "kd-node": "master"}  # backend -> scripts/realkd key
NODE_BACKENDS = ("kd-node", "node")  # the backends with a real node (tests/real/nodesession.py)
NAMESPACE = "kubedirector"
NAME = "kubedirector"  # OPERATOR_NAME: the Deployment KD takes as owner of what it creates
VALIDATOR = "kubedirector-validator"  # the webhook Service KD creates (pkg/validator)
WEBHOOK_PORT = 8443  # KD's validation server listens here on every address
METRICS_PORT = 8383  # controller-runtime's metrics server (fixed in KD's main.go)
OPERATOR_METRICS_PORT = 8686  # operator-sdk's custom-resource metrics (fixed too)
PORTS = (WEBHOOK_PORT, METRICS_PORT, OPERATOR_METRICS_PORT)
STARTS = 2  # KD (Go 1.15) was once seen to segfault at start and never again in the next runs: one more try
DEFAULT_CLASS = "standard"  # the default StorageClass these backends provide (KD refuses a cluster without one)
SHARED_ENV = "REALKD_SHARED"


def build() -> dict[str, Path]:
    """scripts/realkd's outputs (master, live-app-upgrade: folders; configcli: the archive); builds on first use."""
    done = subprocess.run([str(ROOT / "scripts" / "realkd")], stdout=subprocess.PIPE, text=True, stderr=None)
    if done.returncode != 0:
        raise ControlPlaneError("scripts/realkd failed (its messages are above)")
    return {k: Path(v) for k, v in (line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)}


def default_storage_class(cp: ControlPlane) -> None:
    """A default StorageClass, as most clusters have (KubeDirector and gitops-kd refuse a KDCluster whose role has
    storage and no class when there is none); the simulated node binds the claims."""
    cp.kubectl(
        "apply",
        "-f",
        "-",
        stdin=yaml.safe_dump(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": DEFAULT_CLASS, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "Immediate",
            }
        ),
    )


def host_address() -> str:
    """This machine's first non-loopback IPv4 address: kube-apiserver refuses loopback Endpoints, and calls the
    webhook at the Endpoints' address."""
    try:
        for addr in socket.gethostbyname_ex(socket.gethostname())[2]:
            if not addr.startswith("127."):
                return addr
    except OSError:  # the host name does not resolve: ask hostname -I
        pass
    said = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    found = [a for a in said if "." in a and not a.startswith("127.")]
    if not found:
        raise ControlPlaneError("no non-loopback IPv4 address on this machine for KubeDirector's webhook Endpoints")
    return found[0]


class RealKubeDirector:
    """`with RealKubeDirector(cp, "kd", folder) as kd:` installs and starts KubeDirector of that backend's flavour;
    on exit the process is gone (its objects stay with the control plane)."""

    def __init__(self, cp: ControlPlane, backend: str, workdir: Path) -> None:
        self.cp, self.backend, self.workdir = cp, backend, workdir
        self.flavour = FLAVOURS[backend]
        self.proc: _Process | None = None
        self.start_seconds = 0.0
        self._stop = threading.Event()
        self._endpoints: threading.Thread | None = None
        self.address = host_address()

    @property
    def log(self) -> Path:
        return self.workdir / "kubedirector.log"

    def __enter__(self) -> RealKubeDirector:
        began = time.monotonic()
        taken = [port for port in PORTS if _listening("127.0.0.1", port)]
        if taken:
            raise ControlPlaneError(
                f"port {', '.join(map(str, taken))} is in use: KubeDirector listens on fixed ports "
                f"{', '.join(map(str, PORTS))}, so one real KubeDirector backend runs at a time "
                "on a machine (is another test session running --backend=kd?)"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        built = build()
        home = built[self.flavour]
        rest = RestClient(self.cp.api_client())
        self._install(rest, home / "deploy" / "kubedirector")
        kubeconfig = self._kubeconfig(rest)
        self._endpoints = threading.Thread(target=self._keep_endpoints, args=(rest,), daemon=True)
        self._endpoints.start()
        for attempt in range(1, STARTS + 1):
            self._spawn(home / "kubedirector", kubeconfig, built["configcli"])
            try:
                wait_for(
                    "KubeDirector's mutating webhook configuration",
                    lambda: (
                        self._alive()
                        and bool(rest.list("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations")["items"])
                    ),
                    120,
                )
                wait_for(
                    f"KubeDirector's webhook listening on {self.address}:{WEBHOOK_PORT}",
                    lambda: self._alive() and _listening(self.address, WEBHOOK_PORT),
                    60,
                )
                break
            except ControlPlaneError:  # it exited while starting: its log is kept, once more
                if attempt == STARTS:
                    self.stop()
                    raise
                self.log.rename(self.log.with_suffix(f".start{attempt}.log"))
            except BaseException:
                self.stop()
                raise
        self.start_seconds = time.monotonic() - began
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self.proc is not None:
            self.proc.stop()
            self.proc = None

    def _alive(self) -> bool:
        assert self.proc is not None
        self.proc.check_alive()
        return True

    def _install(self, rest: RestClient, deploy: Path) -> None:
        """KD's CRDs, its namespace, ServiceAccount and ClusterRole(binding) (the binding's subject moved to KD's
        namespace), a default StorageClass, and the Deployment object KD takes as owner (no pod runs it: this
        control plane has no deployment controller)."""
        for crd in sorted(deploy.glob("*_crd.yaml")):
            self.cp.kubectl("apply", "-f", str(crd))
        if rest.get_or_none("v1", "namespaces", None, NAMESPACE) is None:
            rest.create("v1", "namespaces", None, {"metadata": {"name": NAMESPACE}})
        docs = [d for d in yaml.safe_load_all((deploy / "rbac-default.yaml").read_text()) if d]
        for doc in docs:
            if doc["kind"] == "ServiceAccount":
                doc["metadata"]["namespace"] = NAMESPACE
            for subject in doc.get("subjects") or ():
                subject["namespace"] = NAMESPACE
        self.cp.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
        default_storage_class(self.cp)
        labels = {"name": NAME}
        self.cp.kubectl(
            "apply",
            "-f",
            "-",
            stdin=yaml.safe_dump(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": NAME, "namespace": NAMESPACE},
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": labels},
                        "template": {
                            "metadata": {"labels": labels},
                            "spec": {
                                "serviceAccountName": NAME,
                                "containers": [{"name": NAME, "image": "bluek8s/kubedirector:unstable"}],
                            },
                        },
                    },
                }
            ),
        )

    def _kubeconfig(self, rest: RestClient) -> Path:
        """A kubeconfig with KD's ServiceAccount token (a token Secret the token controller fills)."""
        assert self.cp.pki is not None
        return write_kubeconfig(
            self.workdir / "kubedirector.kubeconfig",
            self.cp.server,
            self.cp.pki.ca.cert,
            token=self.cp.service_account_token(NAMESPACE, NAME),
        )

    def _spawn(self, binary: Path, kubeconfig: Path, configcli: Path) -> None:
        """KD in a private mount namespace: a tmpfs on /run holds the serviceaccount namespace file (leader election
        and operator-sdk read it), a tmpfs on /home holds /home/kubedirector/configcli.tgz."""
        sa_dir = "/run/secrets/kubernetes.io/serviceaccount"
        script = " && ".join(
            [
                "mount -t tmpfs tmpfs /run",
                f"mkdir -p {sa_dir}",
                f"printf %s {NAMESPACE} > {sa_dir}/namespace",
                "mount -t tmpfs tmpfs /home",
                "mkdir -p /home/kubedirector",
                f"cp {shlex.quote(str(configcli))} /home/kubedirector/configcli.tgz",
                f"exec {shlex.quote(str(binary))}",
            ]
        )
        env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "MY_NAMESPACE": NAMESPACE,
            "WATCH_NAMESPACE": "",
            "OPERATOR_NAME": NAME,
            "POD_NAME": f"{NAME}-out-of-cluster",
        }
        self.proc = _Process(
            f"kubedirector ({self.flavour})", ["unshare", "-m", "--propagation", "private", "sh", "-c", script], self.log, env
        )

    def _keep_endpoints(self, rest: RestClient) -> None:
        """Endpoints for KD's webhook Service at this machine's address, made again whenever KD re-creates the
        Service (no endpoints controller runs here)."""
        body: dict[str, Any] = {
            "metadata": {"name": VALIDATOR, "namespace": NAMESPACE},
            "subsets": [{"addresses": [{"ip": self.address}], "ports": [{"port": WEBHOOK_PORT, "protocol": "TCP"}]}],
        }
        while not self._stop.wait(0.5):
            try:
                if rest.get_or_none("v1", "services", NAMESPACE, VALIDATOR) is None:
                    continue
                if rest.get_or_none("v1", "endpoints", NAMESPACE, VALIDATOR) is None:
                    rest.create("v1", "endpoints", NAMESPACE, dict(body))
            except Exception:  # a transient error: the next round tries again
                continue


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False
