"""Deletion: finalizers, graceful pod deletion, propagation policies, ownerReference GC and namespace teardown."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from kdsim import errors
from kdsim.apiserver.meta import meta, now, owner_uids
from kdsim.apiserver.objects import ObjectApi
from kdsim.apiserver.resources import CRD_GROUP, CRD_PLURAL, ResourceType

log = logging.getLogger(__name__)

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
Scheduler = Callable[[float, Callable[[], None]], None]


class Deleter:
    """DELETE and DELETECOLLECTION with the garbage collector and namespace controller folded in (synchronously)."""

    def __init__(self, api: ObjectApi, *, schedule: Scheduler | None = None, pod_grace_cap: float = 1.0) -> None:
        self.api = api
        self.store = api.store
        self.schedule = schedule
        self.pod_grace_cap = pod_grace_cap
        api.on_finalized = lambda rt, obj: self._remove(rt, obj)
        self._queue: deque[tuple[str, str, str, str]] = deque()  # removed objects' (uid, group, plural, ns)
        self._draining = False

    def _rt(self, group: str, plural: str) -> ResourceType | None:
        types = self.api.registry.versions_of(group, plural)
        return next((t for t in types if t.storage), types[0] if types else None)

    # -- delete --------------------------------------------------------------------------------
    def delete(
        self, rt: ResourceType, namespace: str | None, name: str, options: dict[str, Any] | None = None, *, dry_run: bool = False
    ) -> tuple[dict[str, Any], bool]:
        """Delete one object; return (body, removed_now). body is the object, or a Status when removed now.
        `dry_run`: check and answer the same, but store nothing (no write, no watch event, no resourceVersion)."""
        opts = options or {}
        with self.store.lock:
            obj = self.api.read(rt, namespace, name)
            m = meta(obj)
            pre = opts.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != m.get("uid"):
                raise errors.conflict(
                    rt.plural,
                    name,
                    rt.group,
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {m.get('uid')}",
                )
            if pre.get("resourceVersion") and pre["resourceVersion"] != m.get("resourceVersion"):
                raise errors.conflict(
                    rt.plural,
                    name,
                    rt.group,
                    f"Precondition failed: ResourceVersion in "
                    f"precondition: {pre['resourceVersion']}, ResourceVersion in object meta: "
                    f"{m.get('resourceVersion')}",
                )
            policy = opts.get("propagationPolicy")
            if policy is None and opts.get("orphanDependents") is not None:
                policy = "Orphan" if opts["orphanDependents"] else "Background"
            if policy not in (None, "Background", "Foreground", "Orphan"):
                raise errors.invalid(
                    "DeleteOptions",
                    "",
                    [
                        errors.Cause(
                            "FieldValueNotSupported",
                            f'Unsupported value: "{policy}": supported values: "Foreground", "Background", "Orphan", "nil"',
                            "propagationPolicy",
                        )
                    ],
                )
            if dry_run:
                return self._dry_run_body(rt, obj, opts, policy)
            if m.get("deletionTimestamp"):
                return self._delete_again(rt, obj, opts)
            if policy == "Orphan":
                self._orphan_dependents(str(m.get("uid")))
            if rt.group == "" and rt.plural == "namespaces":
                return self._terminate_namespace(rt, obj), False
            finalizers = list(m.get("finalizers") or [])
            if policy == "Foreground" and FOREGROUND not in finalizers:
                finalizers.append(FOREGROUND)
            grace = self._pod_grace(rt, obj, opts)
            if finalizers or grace > 0:
                m["finalizers"] = finalizers
                if not finalizers:
                    m.pop("finalizers")
                m["deletionTimestamp"] = now()
                m["deletionGracePeriodSeconds"] = int(grace)
                if rt.has_generation and m.get("generation"):
                    m["generation"] = int(m["generation"]) + 1
                stored = self.api._out(rt, self.store.write(rt.group, rt.plural, obj))
                if policy == "Foreground":
                    self._delete_dependents(str(m.get("uid")))
                    self._release_foreground()
                if grace > 0:
                    self._schedule_pod_removal(rt, stored, grace)
                return stored, False
            self._remove(rt, obj)
            return self._deleted_body(rt, obj), True

    def _dry_run_body(
        self, rt: ResourceType, obj: dict[str, Any], opts: dict[str, Any], policy: str | None
    ) -> tuple[dict[str, Any], bool]:
        """What delete would answer, computed on the copy `obj` alone."""
        m = meta(obj)
        if m.get("deletionTimestamp"):
            return obj, False
        finalizers = list(m.get("finalizers") or [])
        if policy == "Foreground" and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        grace = self._pod_grace(rt, obj, opts)
        namespace = rt.group == "" and rt.plural == "namespaces"
        if not (finalizers or grace > 0 or namespace):
            return self._deleted_body(rt, obj), False
        if finalizers:
            m["finalizers"] = finalizers
        m["deletionTimestamp"] = now()
        m["deletionGracePeriodSeconds"] = int(grace)
        if namespace:
            obj["status"] = {"phase": "Terminating"}
        return obj, False

    def _deleted_body(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        if rt.returns_deleted:
            return self.api._out(rt, obj)
        return status_success(rt, obj)

    def _delete_again(self, rt: ResourceType, obj: dict[str, Any], opts: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """A DELETE of an object already being deleted may only shorten a pod's grace period."""
        m = meta(obj)
        grace = opts.get("gracePeriodSeconds")
        if rt.group != "" or rt.plural != "pods" or grace is None or int(grace) >= int(m.get("deletionGracePeriodSeconds") or 0):
            return obj, False
        if int(grace) <= 0 and not m.get("finalizers"):
            self._remove(rt, obj)
            return self._deleted_body(rt, obj), True
        m["deletionGracePeriodSeconds"] = max(0, int(grace))
        return self.api._out(rt, self.store.write(rt.group, rt.plural, obj)), False

    def _pod_grace(self, rt: ResourceType, obj: dict[str, Any], opts: dict[str, Any]) -> float:
        if rt.group != "" or rt.plural != "pods" or not (obj.get("spec") or {}).get("nodeName"):
            return 0
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        grace = opts.get("gracePeriodSeconds")
        if grace is None:
            grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        return max(0.0, float(grace))

    def _schedule_pod_removal(self, rt: ResourceType, pod: dict[str, Any], grace: float) -> None:
        uid, ns, name = meta(pod).get("uid"), meta(pod).get("namespace", ""), meta(pod)["name"]

        def finish() -> None:
            with self.store.lock:
                cur = self.store.read(rt.group, rt.plural, ns, name)
                if cur is None or meta(cur).get("uid") != uid or meta(cur).get("finalizers"):
                    return
                self._remove(rt, cur)

        if self.schedule is None:
            finish()
        else:
            self.schedule(min(grace, self.pod_grace_cap), finish)

    def resume(self) -> None:
        """After a restart: finish the graceful deletions of pods whose timers were lost."""
        rt = self._rt("", "pods")
        if rt is None:
            return
        for pod_rt, pod in self._load([k for k in self.store.deleting() if k[1] == "pods" and k[0] == ""]):
            self._schedule_pod_removal(pod_rt, pod, float(meta(pod).get("deletionGracePeriodSeconds") or 0))

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None,
        field_selector: str | None,
        options: dict[str, Any] | None,
        dry_run: bool = False,
    ) -> list[dict[str, Any]]:
        listing = self.api.list(rt, namespace, label_selector=label_selector, field_selector=field_selector)
        out = []
        for item in listing["items"]:
            m = meta(item)
            try:
                body, _ = self.delete(rt, m.get("namespace"), m["name"], options, dry_run=dry_run)
            except errors.ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            out.append(item if body.get("kind") == "Status" else body)
        return out

    # -- removal and garbage collection --------------------------------------------------------
    def _remove(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        m = meta(obj)
        ns = m.get("namespace", "") or ""
        removed = self.store.remove(rt.group, rt.plural, ns, m["name"])
        if removed is None:
            return
        if rt.group == CRD_GROUP and rt.plural == CRD_PLURAL:
            self._remove_crd_contents(removed)
        self._queue.append((str(m.get("uid")), rt.group, rt.plural, ns))
        if self._draining:
            return
        self._draining = True
        try:
            while self._queue:
                uid, group, plural, namespace = self._queue.popleft()
                self._collect(uid)
                self._release_foreground()
                if namespace:
                    self._finish_namespace(namespace)
        finally:
            self._draining = False

    def _load(self, keys: list[tuple[str, str, str, str]]) -> list[tuple[ResourceType, dict[str, Any]]]:
        out = []
        for group, plural, ns, name in keys:
            rt = self._rt(group, plural)
            obj = self.store.read(group, plural, ns, name)
            if rt is not None and obj is not None:
                out.append((rt, self.api._out(rt, obj)))
        return out

    def _dependents(self, owner_uid: str) -> list[tuple[ResourceType, dict[str, Any]]]:
        return self._load(self.store.dependents(owner_uid))

    def _collect(self, owner_uid: str) -> None:
        """Background GC: dependents of a removed owner lose the reference, or are deleted if it was the last."""
        dependents = self._dependents(owner_uid)
        if not dependents:
            return
        for rt, obj in dependents:
            uids = owner_uids(obj)
            if any(self.store.has_uid(u) for u in uids if u != owner_uid):
                meta(obj)["ownerReferences"] = [r for r in meta(obj)["ownerReferences"] if r.get("uid") != owner_uid]
                self.store.write(rt.group, rt.plural, obj)
            else:
                self._safe_delete(rt, obj, None)

    def _safe_delete(self, rt: ResourceType, obj: dict[str, Any], policy: str | None) -> None:
        try:
            self.delete(
                rt,
                meta(obj).get("namespace"),
                meta(obj)["name"],
                {"propagationPolicy": policy, "gracePeriodSeconds": 0} if policy else {"gracePeriodSeconds": 0},
            )
        except errors.ApiError as exc:
            if exc.code != 404:
                log.warning("garbage collector could not delete %s %s: %s", rt.plural, meta(obj)["name"], exc)

    def _delete_dependents(self, owner_uid: str) -> None:
        for rt, obj in self._dependents(owner_uid):
            self._safe_delete(rt, obj, "Background")

    def _orphan_dependents(self, owner_uid: str) -> None:
        for rt, obj in self._dependents(owner_uid):
            meta(obj)["ownerReferences"] = [r for r in meta(obj)["ownerReferences"] if r.get("uid") != owner_uid]
            if not meta(obj)["ownerReferences"]:
                meta(obj).pop("ownerReferences")
            self.store.write(rt.group, rt.plural, obj)

    def _release_foreground(self) -> None:
        """Owners in foreground deletion with no dependents left lose the foregroundDeletion finalizer."""
        waiting = [
            (rt, obj) for rt, obj in self._load(self.store.deleting()) if FOREGROUND in (meta(obj).get("finalizers") or [])
        ]
        for rt, obj in waiting:
            m = meta(obj)
            if self.store.dependents(str(m.get("uid"))):
                continue
            m["finalizers"] = [f for f in m["finalizers"] if f != FOREGROUND]
            if not m["finalizers"]:
                m.pop("finalizers")
                self._remove(rt, obj)
            else:
                self.store.write(rt.group, rt.plural, obj)

    def _remove_crd_contents(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        group, plural = spec.get("group", ""), (spec.get("names") or {}).get("plural", "")
        for g, p, ns, name in self.store.keys():
            if g == group and p == plural:
                self.store.remove(g, p, ns, name)
        self.api.registry.remove_crd(meta(crd)["name"])

    # -- namespaces ----------------------------------------------------------------------------
    def _terminate_namespace(self, rt: ResourceType, ns_obj: dict[str, Any]) -> dict[str, Any]:
        name = meta(ns_obj)["name"]
        meta(ns_obj)["deletionTimestamp"] = now()
        meta(ns_obj)["deletionGracePeriodSeconds"] = 0
        ns_obj["status"] = {"phase": "Terminating"}
        stored = self.api._out(rt, self.store.write(rt.group, rt.plural, ns_obj))
        for group, plural, ns, obj_name in self.store.keys():
            if ns != name:
                continue
            item_rt = self._rt(group, plural)
            obj = self.store.read(group, plural, ns, obj_name)
            if item_rt is not None and obj is not None:
                self._safe_delete(item_rt, self.api._out(item_rt, obj), "Background")
        self._finish_namespace(name)
        return self.api.read(rt, None, name) if self.store.read("", "namespaces", "", name) else stored

    def _finish_namespace(self, name: str) -> None:
        ns_obj = self.store.read("", "namespaces", "", name)
        if ns_obj is None or not meta(ns_obj).get("deletionTimestamp"):
            return
        if any(k[2] == name for k in self.store.keys()):
            return
        rt = self._rt("", "namespaces")
        assert rt is not None
        self._remove(rt, ns_obj)


def status_success(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    details: dict[str, Any] = {"name": meta(obj).get("name"), "kind": rt.plural, "uid": meta(obj).get("uid")}
    if rt.group:
        details["group"] = rt.group
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
