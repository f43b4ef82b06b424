"""The simulated StatefulSet controller: list+watch sets, pods and revisions over HTTP; apply statefulset_plan."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from kubernetes.client.exceptions import ApiException

from kdsim.controllers import revisions as rev
from kdsim.controllers.statefulset_plan import Action, plan
from kdsim.events import EventRecorder
from kubeplumb.informer import Informer, object_key, split_key, start_synced
from kubeplumb.names import NORMAL, WARNING
from kubeplumb.rest import RestClient
from kubeplumb.workqueue import WorkQueue

if TYPE_CHECKING:
    from kdsim.controllers.host import ClusterHost

log = logging.getLogger(__name__)


def _controller_ref(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "StatefulSet":
            return cast(dict[str, Any], ref)
    return None


def _claim_pod(sts: Mapping[str, Any], claim: str) -> str:
    """The pod a claim `<template>-<pod>` is made for."""
    for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
        prefix = f"{(template.get('metadata') or {}).get('name')}-"
        if claim.startswith(prefix):
            return claim[len(prefix) :]
    return claim


OWNER_UID = "controller-uid"  # index: the uid of the StatefulSet controlling the object
OWNER_NAME = "controller-name"  # index: "namespace/name" of the StatefulSet controlling the object


def _owner_uid(obj: dict[str, Any]) -> Iterator[str]:
    ref = _controller_ref(obj)
    if ref is not None and ref.get("uid"):
        yield str(ref["uid"])


def _owner_name(obj: dict[str, Any]) -> Iterator[str]:
    ref = _controller_ref(obj)
    if ref is not None:
        yield f"{obj['metadata'].get('namespace') or ''}/{ref.get('name')}"


class _Claims:
    """The PVC names of one namespace, answered from the claims informer's cache (no copy of the list)."""

    def __init__(self, informer: Informer, namespace: str | None) -> None:
        self.informer, self.namespace = informer, namespace

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.informer.has(self.namespace, name)


class StatefulSetController:
    """Level-triggered reconcile of every StatefulSet in the cluster."""

    def __init__(self, api_client: Any) -> None:
        self.rest = RestClient(api_client)
        self.events = EventRecorder(self.rest, "statefulset-controller", ("StatefulSet", "apps/v1"))
        self.sets = Informer(api_client, "apps/v1", "statefulsets")
        self.pods = Informer(api_client, "v1", "pods")
        self.revisions = Informer(api_client, "apps/v1", "controllerrevisions")
        self.claims = Informer(api_client, "v1", "persistentvolumeclaims")
        for informer in (self.pods, self.revisions):
            informer.add_index(OWNER_UID, _owner_uid)
            informer.add_index(OWNER_NAME, _owner_name)
        self.queue = WorkQueue(self.reconcile, name="statefulset", workers=1)
        self.sets.add_handler(lambda _e, obj, _o: self.queue.add(object_key(obj)))
        self.pods.add_handler(self._on_owned)
        self.revisions.add_handler(self._on_owned)

    def _on_owned(self, _event: str, obj: dict[str, Any], _old: dict[str, Any] | None) -> None:
        ref = _controller_ref(obj)
        if ref is not None:
            self.queue.add(f"{obj['metadata'].get('namespace')}/{ref.get('name')}")

    def start(self) -> StatefulSetController:
        start_synced((self.pods, self.revisions, self.claims, self.sets))
        self.queue.start()
        return self

    def stop(self) -> None:
        self.queue.stop()
        self.events.close()
        for inf in (self.sets, self.pods, self.revisions, self.claims):
            inf.stop()

    # -- reconcile ---------------------------------------------------------------------------------
    def _owned(self, informer: Informer, namespace: str, sts: Mapping[str, Any]) -> list[dict[str, Any]]:
        uid = sts["metadata"].get("uid")
        return (
            [o for o in informer.by_index(OWNER_UID, str(uid)) if (o.get("metadata") or {}).get("namespace", "") == namespace]
            if uid
            else []
        )

    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        sts = self.sets.get(namespace, name)
        if sts is None:
            self._collect_garbage(namespace or "", name)
            return
        pods = self._owned(self.pods, namespace or "", sts)
        history = rev.sort_revisions(self._owned(self.revisions, namespace or "", sts))
        current, update, collisions = self._revisions(sts, history)
        result = plan(sts, pods, _Claims(self.claims, namespace), current, update, collisions)
        for action in result.actions:
            self._apply(action, sts)
        if result.status != {k: (sts.get("status") or {}).get(k) for k in result.status}:
            try:
                self.rest.patch("apps/v1", "statefulsets", namespace, name, {"status": result.status}, subresource="status")
            except ApiException as exc:
                if exc.status != 404:
                    raise
        history = rev.sort_revisions(self._owned(self.revisions, namespace or "", sts))
        limit = int((sts.get("spec") or {}).get("revisionHistoryLimit", 10))
        for old in rev.revisions_to_prune(history, pods, current["metadata"]["name"], update["metadata"]["name"], limit):
            self._ignore_missing(lambda n=old: self.rest.delete("apps/v1", "controllerrevisions", namespace, n))

    def _revisions(self, sts: dict[str, Any], history: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any], int]:
        """getStatefulSetRevisions: find or create the update revision; the current one from status."""
        namespace = sts["metadata"].get("namespace")
        collisions = int((sts.get("status") or {}).get("collisionCount") or 0)
        candidate = rev.build_revision(sts, rev.next_revision_number(history), collisions)
        equal = rev.equal_revisions(history, candidate)
        if equal and history and equal[-1]["metadata"]["name"] == history[-1]["metadata"]["name"]:
            update = history[-1]
        elif equal:
            update = equal[-1]
            update["revision"] = candidate["revision"]
            update = self.rest.replace("apps/v1", "controllerrevisions", namespace, update["metadata"]["name"], update)
        else:
            try:
                update = self.rest.create("apps/v1", "controllerrevisions", namespace, candidate)
            except ApiException as exc:
                if exc.status != 409:
                    raise
                existing = self.rest.get("apps/v1", "controllerrevisions", namespace, candidate["metadata"]["name"])
                if existing.get("data") != candidate["data"]:
                    self.rest.patch(
                        "apps/v1",
                        "statefulsets",
                        namespace,
                        sts["metadata"]["name"],
                        {"status": {"collisionCount": collisions + 1}},
                        subresource="status",
                    )
                    raise RuntimeError(f"hash collision on revision {candidate['metadata']['name']}") from exc
                update = existing
        current_name = (sts.get("status") or {}).get("currentRevision")
        current = next((r for r in history if r["metadata"]["name"] == current_name), update)
        return current, update, collisions

    def _apply(self, action: Action, sts: dict[str, Any]) -> None:
        meta = action.obj["metadata"]
        ns, name = meta.get("namespace"), meta["name"]
        if action.verb == "create_pvc":
            self._recorded(
                sts,
                "create",
                f"Claim {name} Pod {_claim_pod(sts, name)}",
                "success",
                lambda: self._ignore_exists(lambda: self.rest.create("v1", "persistentvolumeclaims", ns, action.obj)),
            )
        elif action.verb == "create_pod":
            log.info("statefulset: creating pod %s/%s", ns, name)
            self._recorded(
                sts,
                "create",
                f"Pod {name}",
                "successful",
                lambda: self._ignore_exists(lambda: self.rest.create("v1", "pods", ns, action.obj)),
            )
        elif action.verb == "delete_pod":
            log.info("statefulset: deleting pod %s/%s", ns, name)
            self._recorded(
                sts,
                "delete",
                f"Pod {name}",
                "successful",
                lambda: self._ignore_missing(lambda: self.rest.delete("v1", "pods", ns, name, uid=meta.get("uid"))),
            )
        else:
            raise ValueError(f"unknown statefulset action {action.verb!r}")

    def _recorded(self, sts: dict[str, Any], verb: str, what: str, success: str, call: Any) -> None:
        """Run `call`, then record the StatefulSet controller's event for it (recordPodEvent/recordClaimEvent):
        `create Pod web-0 in StatefulSet web successful`, or a Failed* warning naming the error."""
        set_name = sts["metadata"]["name"]
        try:
            if call() is False:
                return
        except ApiException as exc:
            self.events.event(
                sts, WARNING, f"Failed{verb.title()}", f"{verb} {what} in StatefulSet {set_name} failed error: {exc.reason}"
            )
            raise
        self.events.event(sts, NORMAL, f"Successful{verb.title()}", f"{verb} {what} in StatefulSet {set_name} {success}")

    def _collect_garbage(self, namespace: str, name: str) -> None:
        """The set is gone: delete the pods and revisions it controlled (the garbage collector's job)."""
        for informer, api_version, plural in ((self.pods, "v1", "pods"), (self.revisions, "apps/v1", "controllerrevisions")):
            for obj in informer.by_index(OWNER_NAME, f"{namespace}/{name}"):
                ref = _controller_ref(obj)
                if ref and not self._live_set(namespace, name, ref.get("uid")) and not obj["metadata"].get("deletionTimestamp"):
                    self._ignore_missing(
                        lambda o=obj, v=api_version, p=plural: self.rest.delete(v, p, namespace, o["metadata"]["name"])
                    )

    def _live_set(self, namespace: str, name: str, uid: Any) -> bool:
        """Whether the StatefulSet `uid` still exists (the only one that can is the cached `name`)."""
        sts = self.sets.get(namespace, name)
        return sts is not None and sts["metadata"].get("uid") == uid

    @staticmethod
    def _ignore_exists(call: Any) -> bool:
        """False when the object already existed."""
        try:
            call()
        except ApiException as exc:
            if exc.status != 409:
                raise
            return False
        return True

    @staticmethod
    def _ignore_missing(call: Any) -> bool:
        """False when the object was already gone (or replaced)."""
        try:
            call()
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise
            return False
        return True


def start(cluster: ClusterHost) -> StatefulSetController:
    """Start the StatefulSet controller against the cluster's API server."""
    return StatefulSetController(cluster.api_client()).start()
