"""KubeDirector's admission webhook for KDApp edits, as the embedded API server's option `kd_app_edits`.

"upgrade" (the default) admits every edit: KubeDirector with the relaxed in-use rule live upgrades need.
"strict" refuses what stock KubeDirector refuses (UPDATE changing the spec, or DELETE, of a KDApp that
KDClusters use; see sim/kubedirector/app_in_use.py), answered like kube-apiserver 1.30 answers a webhook
denial that carries no code: 400, status Failure, no reason, `admission webhook "<name>" denied the request: ...`.
"""

from __future__ import annotations

from typing import Any

from kdsim import errors
from kdsim.apiserver.resources import ResourceType
from kdsim.apiserver.storage import Store
from kdsim.controllers.kubedirector import SYSTEM_NAMESPACE
from kdsim.kubedirector import app_in_use, names

UPGRADE, STRICT = "upgrade", "strict"
MODES = (UPGRADE, STRICT)
# KD registers its handler as "hard-" + webhookHandlerName (pkg/validator/util.go, since 2021).
WEBHOOK_NAME = "hard-validate-cr.kubedirector.hpe.com"


class KdAppWebhook:
    """Called by the API server before an UPDATE (any patch type, server-side apply) or DELETE is stored."""

    def __init__(self, store: Store, mode: str = UPGRADE, system_namespace: str = SYSTEM_NAMESPACE) -> None:
        if mode not in MODES:
            raise ValueError(f"kd_app_edits must be one of {', '.join(MODES)}, not {mode!r}")
        self.store, self.mode, self.system_namespace = store, mode, system_namespace

    def _applies(self, rt: ResourceType, subresource: str | None) -> bool:
        return (self.mode == STRICT and rt.group == names.API_GROUP and rt.plural == names.KDAPP_PLURAL
                and not subresource)

    def admit_update(self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any],
                     subresource: str | None = None) -> None:
        """Raise the webhook's denial when KD would refuse this update."""
        if not self._applies(rt, subresource):
            return
        references = self._references(old)
        if references and app_in_use.spec_changed(old.get("spec"), new.get("spec")):
            raise denied(app_in_use.denial(references))

    def admit_delete(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Raise the webhook's denial when KD would refuse this delete."""
        if not self._applies(rt, None):
            return
        references = self._references(obj)
        if references:
            raise denied(app_in_use.denial(references))

    def _references(self, app: dict[str, Any]) -> list[str]:
        meta = app.get("metadata") or {}
        return app_in_use.referencing_clusters(
            str(meta.get("namespace", "")), str(meta.get("name", "")),
            self.store.read_all(names.API_GROUP, names.KDCLUSTER_PLURAL), system_namespace=self.system_namespace,
            app_exists=lambda ns, name: self.store.read(names.API_GROUP, names.KDAPP_PLURAL, ns, name) is not None)


def denied(message: str) -> errors.ApiError:
    """kube-apiserver's webhook ToStatusErr for a denial without code or reason: 400, Failure, no reason."""
    return errors.ApiError(400, "", f'admission webhook "{WEBHOOK_NAME}" denied the request: {message}')
