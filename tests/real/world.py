"""The real backend of the e2e harness: a namespace on the real control plane, the controller as the gitops-kd
ServiceAccount of deploy/, `gitops-kd sim node` + `sim kubedirector` joined; a 403 to the controller fails."""

from __future__ import annotations

import uuid
from pathlib import Path

from kubernetes import client, config
from kubernetes.client import ApiClient

from gitops_kd.testing import wait_for
from kubeplumb.rest import RestClient
from tests.real.controlplane import GITOPS_KD_USER, ControlPlane


class RealBackend:
    """A fresh namespace on `cp` (deleted on close); the controller's identity is the gitops-kd ServiceAccount."""

    def __init__(self, cp: ControlPlane, controller_kubeconfig: Path, name: str = "real") -> None:
        self.name = name  # the backend: real (simulated KubeDirector), kd, kd-upgrade (the real one)
        self.cp = cp
        self.controller_kubeconfig = controller_kubeconfig
        self.kubeconfig = cp.kubeconfig
        self.ns = f"s-{uuid.uuid4().hex[:8]}"
        self._audit_from = len(cp.audit_events())  # 403s provoked on purpose by earlier tests are not ours
        rest = RestClient(cp.api_client())
        rest.create("v1", "namespaces", None, {"metadata": {"name": self.ns}})

        wait_for(f"the default ServiceAccount in {self.ns}", lambda: cp.default_service_account_ready(rest, self.ns), 60)

    def api_client(self) -> ApiClient:
        return config.new_client_from_config(config_file=str(self.controller_kubeconfig))

    def admin_api_client(self) -> ApiClient:
        return self.cp.api_client()

    def forbidden(self) -> list[str]:
        """Every request of the controller's answered 403 since this world began (the audit log), anywhere."""
        return [
            f"{(e.get('verb'))} {e.get('requestURI')}"
            for e in self.cp.audit_events()[self._audit_from :]
            if (e.get("user") or {}).get("username") == GITOPS_KD_USER and (e.get("responseStatus") or {}).get("code") == 403
        ]

    def close(self) -> None:
        client.CoreV1Api(self.cp.api_client()).delete_namespace(self.ns)
