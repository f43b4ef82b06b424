"""KubeDirector's admission webhook: its mutations of every KDApp / KDCluster write (KdMutations, always on,
kdsim/kubedirector/mutate.py), and its change rules as the embedded API server's option `kd_app_edits`.

"strict" (the default) refuses what stock KubeDirector refuses: an UPDATE changing the spec, or a DELETE, of a
KDApp that KDClusters use (kdsim/kubedirector/app_in_use.py), and an UPDATE of a KDCluster changing `app` or
`appCatalog`, or a property other than `members` of a role with members (kdsim/kubedirector/cluster_changes.py).
"upgrade" admits every edit: KubeDirector with the relaxed in-use rule the seed's live upgrade proposed.
"live-app-upgrade" is KubeDirector's live-app-upgrade branch: stock's rules, but a KDApp in use may gain
`upgradable`, and a KDCluster's `app` may switch under the branch's rules (kdsim/kubedirector/live_upgrade.py);
its CRDs carry the branch's fields (kdsim/kubedirector/branch_crds.py) and its controller reacts to a switch.
Its answer carries no code, so the dispatcher answers like kube-apiserver: 400, status Failure, no reason,
`admission webhook "<name>" denied the request: ...`.
"""

from __future__ import annotations

from typing import Any

from kdsim.apiserver import webhook_match
from kdsim.apiserver.resources import ResourceType
from kdsim.apiserver.storage import Store
from kdsim.apiserver.webhooks import Builtin, denial
from kdsim.kubedirector import app_in_use, cluster_changes, live_upgrade, mutate, names
from kdsim.kubedirector.live_upgrade import MODE as LIVE_UPGRADE

STORAGE_GROUP, STORAGE_CLASSES = "storage.k8s.io", "storageclasses"
UPGRADE, STRICT = "upgrade", "strict"
MODES = (UPGRADE, STRICT, LIVE_UPGRADE)
# KD registers its handler as "hard-" + webhookHandlerName (pkg/validator/util.go, since 2021).
WEBHOOK_NAME = "hard-validate-cr.kubedirector.hpe.com"


class KdAppWebhook:
    """KubeDirector's validating webhook, served inside the API server: the dispatcher (webhooks.py) calls it
    with the same AdmissionReview request, matching and denial wording as a webhook it reaches over HTTPS."""

    def __init__(self, store: Store, mode: str = STRICT, system_namespace: str = names.SYSTEM_NAMESPACE) -> None:
        if mode not in MODES:
            raise ValueError(f"kd_app_edits must be one of {', '.join(MODES)}, not {mode!r}")
        self.store, self.mode, self.system_namespace = store, mode, system_namespace

    def builtin(self) -> Builtin | None:
        """The webhook as the dispatcher serves it (None in "upgrade" mode: KD admits every edit)."""
        if self.mode == UPGRADE:
            return None
        config = {
            "name": WEBHOOK_NAME,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail",
            "rules": [
                {
                    "operations": ["UPDATE", "DELETE"],
                    "apiGroups": [names.API_GROUP],
                    "apiVersions": ["*"],
                    "resources": [names.KDAPP_PLURAL, names.KDCLUSTER_PLURAL],
                }
            ],
        }
        return Builtin(webhook_match.defaulted(config), self.answer)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The AdmissionResponse: refused when KD would refuse (an app's spec changed, or the app deleted, while in
        use; a cluster's read-only properties changed)."""
        old = request.get("oldObject") or {}
        if (request.get("resource") or {}).get("resource") == names.KDCLUSTER_PLURAL:
            return {"allowed": True}  # its change rules judge the request before KD's mutations (KdMutations)
        references = self._references(old)
        new_spec = (request.get("object") or {}).get("spec") or {}
        old_spec = old.get("spec") or {}
        if self.mode == LIVE_UPGRADE:  # the branch lets an app in use gain `upgradable` (pkg/validator/app.go)
            old_spec = live_upgrade.app_update_view(old_spec, new_spec)
        if references and (request.get("operation") == "DELETE" or app_in_use.spec_changed(old_spec, new_spec)):
            return {"allowed": False, "status": {"message": app_in_use.denial(references)}}
        return {"allowed": True}

    def _references(self, app: dict[str, Any]) -> list[str]:
        meta = app.get("metadata") or {}
        return app_in_use.referencing_clusters(
            str(meta.get("namespace", "")),
            str(meta.get("name", "")),
            self.store.read_all(names.API_GROUP, names.KDCLUSTER_PLURAL),
            system_namespace=self.system_namespace,
            app_exists=lambda ns, name: self.store.read(names.API_GROUP, names.KDAPP_PLURAL, ns, name) is not None,
        )


class KdMutations:
    """KubeDirector's mutating webhook (pkg/validator app.go admitAppCR, cluster.go admitClusterCR) as the API
    server's `ObjectApi.mutate` hook: the KDApp / KDCluster stored is the one real KubeDirector would store,
    and a KDCluster needing a default StorageClass when none exists is denied with KD's message."""

    def __init__(
        self,
        store: Store,
        system_namespace: str = names.SYSTEM_NAMESPACE,
        *,
        cluster_rules: bool = True,
        live_upgrade_rules: bool = False,
    ) -> None:
        self.store, self.system_namespace, self.cluster_rules = store, system_namespace, cluster_rules
        self.live_upgrade_rules = live_upgrade_rules

    def __call__(self, rt: ResourceType, new: dict[str, Any], old: dict[str, Any] | None) -> bool:
        if rt.group != names.API_GROUP or not isinstance(new.get("spec"), dict):
            return False
        if rt.plural == names.KDAPP_PLURAL:
            spec = mutate.app_spec(new["spec"])
        elif rt.plural == names.KDCLUSTER_PLURAL:
            if old is not None and old.get("spec") == new.get("spec"):
                return False  # admitClusterCR's shortcut: an update not changing the spec is not validated
            general = self._branch_rules if self.live_upgrade_rules else None
            errors = cluster_changes.change_errors(old, new, general) if old is not None and self.cluster_rules else []
            if errors:  # judged as sent, before KD's mutations, against the stored object (admitClusterCR)
                raise denial(WEBHOOK_NAME, {"message": cluster_changes.denial(errors)})
            spec = self._cluster_spec(new)
        else:
            return False
        if spec == new["spec"]:
            return False
        new["spec"] = spec
        return True

    def _branch_rules(self, old: Any, new: Any) -> list[str]:
        """The live-app-upgrade branch's validateGeneralClusterChanges, the apps read as KD stores them."""

        def find(obj: Any) -> dict[str, Any] | None:
            return self._find_app(str((obj.get("metadata") or {}).get("namespace", "")), obj.get("spec") or {})

        return live_upgrade.general_errors(old, new, find)

    def _cluster_spec(self, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        classes = self.store.read_all(STORAGE_GROUP, STORAGE_CLASSES)
        spec, errors = mutate.cluster_spec(
            obj["spec"],
            namespace=namespace,
            app=self._find_app(namespace, obj["spec"]),
            storage_class=mutate.default_storage_class(classes),
            classes=frozenset(str((c.get("metadata") or {}).get("name")) for c in classes),
        )
        if errors:  # KD answers "\n" + its errors joined by "\n" (admitClusterCR's deferred response)
            raise denial(WEBHOOK_NAME, {"message": "\n" + "\n".join(errors)})
        return spec

    def _find_app(self, namespace: str, spec: dict[str, Any]) -> dict[str, Any] | None:
        """catalog.FindApp: the cluster's namespace first (unless appCatalog is "system"), then KD's."""
        app_id, catalog = str(spec.get("app", "")), spec.get("appCatalog")
        if catalog in (None, names.CATALOG_LOCAL):
            found = self.store.read(names.API_GROUP, names.KDAPP_PLURAL, namespace, app_id)
            if found is not None or catalog is not None:
                return found
        return self.store.read(names.API_GROUP, names.KDAPP_PLURAL, self.system_namespace, app_id)
