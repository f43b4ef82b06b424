"""Object semantics for create / get / list / update / patch: metadata, generation, status, admission."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from typing import Any

import yaml

from kdsim import errors
from kdsim.apiserver import admission, kinds, nodeports
from kdsim.apiserver.meta import body_of, generated_name, meta, new_uid, now, same_ignoring_rv
from kdsim.apiserver.registry import Registry
from kdsim.apiserver.resources import CRD_GROUP, CRD_PLURAL, ResourceType
from kdsim.apiserver.storage import Store


class ObjectApi:
    """The API verbs on stored objects, with kube-apiserver's metadata and subresource rules."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store = store
        self.registry = registry
        self.cluster_ips = kinds.ClusterIPs()
        store.add_index(kinds.CLUSTER_IP_INDEX, kinds.cluster_ips)
        store.add_index(nodeports.NODE_PORT_INDEX, nodeports.node_ports)
        # Hook called after an update removed the last finalizer of an object being deleted.
        self.on_finalized: Callable[[ResourceType, dict[str, Any]], None] = lambda rt, obj: None
        # Mutating admission (an emulated component's webhook, e.g. KubeDirector's): (rt, new, old or None)
        # changes `new` in place (True when it did) or raises the denial; runs after defaulting, before
        # validation, as in kube-apiserver, and a changed object is pruned and defaulted again after it.
        self.mutate: Callable[[ResourceType, dict[str, Any], dict[str, Any] | None], bool] = lambda rt, new, old: False

    # -- helpers -------------------------------------------------------------------------------
    def _out(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
        return obj

    def _ns(self, rt: ResourceType, namespace: str | None) -> str:
        return (namespace or "") if rt.namespaced else ""

    def read(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self.store.read(rt.group, rt.plural, self._ns(rt, namespace), name)
        if obj is None:
            raise errors.not_found(rt.plural, name, rt.group)
        return self._out(rt, obj)

    def exists(self, rt: ResourceType, namespace: str | None, name: str) -> bool:
        return self.store.read(rt.group, rt.plural, self._ns(rt, namespace), name) is not None

    def _check_namespace(self, rt: ResourceType, namespace: str) -> None:
        if not rt.namespaced:
            return
        ns = self.store.read("", "namespaces", "", namespace)
        if ns is None:
            raise errors.not_found("namespaces", namespace)
        if (ns.get("metadata") or {}).get("deletionTimestamp"):
            raise errors.ApiError(
                403,
                "Forbidden",
                f'{rt.group_resource} "{meta(ns).get("name")}" is forbidden: unable to create new '
                f"content in namespace {namespace} because it is being terminated",
                {
                    "name": namespace,
                    "kind": rt.plural,
                    "causes": [
                        {
                            "reason": "NamespaceTerminating",
                            "message": f"namespace {namespace} is being terminated",
                            "field": "metadata.namespace",
                        }
                    ],
                },
            )

    # -- create --------------------------------------------------------------------------------
    def create(
        self, rt: ResourceType, namespace: str | None, body: dict[str, Any], *, dry_run: bool = False, strict: bool = False
    ) -> dict[str, Any]:
        obj = copy.deepcopy(body)
        m = meta(obj)
        self._check_type(rt, obj)
        if strict:
            admission.reject_unknown_fields(rt, obj)
        ns = self._ns(rt, namespace)
        if rt.namespaced:
            if m.get("namespace") and ns and m["namespace"] != ns:
                raise errors.bad_request("the namespace of the provided object does not match the namespace sent on the request")
            ns = ns or m.get("namespace") or "default"
            m["namespace"] = ns
        else:
            m.pop("namespace", None)
        if not m.get("name") and m.get("generateName"):
            m["name"] = generated_name(str(m["generateName"]))
        if not m.get("name"):
            raise errors.invalid(
                rt.kind,
                "",
                [errors.Cause("FieldValueRequired", "Required value: name or generateName is required", "metadata.name")],
                rt.group,
            )
        with self.store.lock:
            self._check_namespace(rt, ns)
            if self.store.read(rt.group, rt.plural, ns, m["name"]) is not None:
                raise errors.already_exists(rt.plural, m["name"], rt.group)
            for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
                m.pop(k, None)
            m["uid"] = new_uid()
            m["creationTimestamp"] = now()
            if rt.has_generation:
                m["generation"] = 1
            else:
                m.pop("generation", None)
            if rt.has_status() and rt.kind != "Node":  # nodes take all fields on create, status too (a kubelet's)
                obj.pop("status", None)
            kinds.prepare_create(rt, obj)
            kinds.convert(rt, obj)
            admission.default_object(rt, obj)
            if self.mutate(rt, obj, None):
                admission.default_object(rt, obj)
            admission.validate_object(rt, obj, None)
            if rt.group == "" and rt.plural == "services":
                self.cluster_ips.allocate(rt, obj, lambda ip: self.store.indexed(kinds.CLUSTER_IP_INDEX, ip))
                nodeports.allocate_create(obj, nodeports.in_use(self.store.index_values(nodeports.NODE_PORT_INDEX)))
            self._out(rt, obj)
            if dry_run:
                return obj
            stored = self.store.write(rt.group, rt.plural, obj)
            self._after_write(rt, stored)
            if rt.group == "" and rt.plural == "namespaces":
                self._default_service_account(m["name"])
            return self._out(rt, stored)

    def _default_service_account(self, namespace: str) -> None:
        """What the serviceaccount controller does for every new namespace."""
        sa = self.registry.lookup("", "v1", "serviceaccounts")
        if sa is not None and self.store.read("", "serviceaccounts", namespace, "default") is None:
            self.create(sa, namespace, {"metadata": {"name": "default"}})

    def _check_type(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if api_version and api_version != rt.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version ({rt.api_version})"
            )
        if kind and kind != rt.kind:
            raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")

    def _after_write(self, rt: ResourceType, stored: dict[str, Any]) -> None:
        if rt.group == CRD_GROUP and rt.plural == CRD_PLURAL:
            self.registry.set_crd(stored)

    # -- list ----------------------------------------------------------------------------------
    def list(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 0,
        continue_token: str | None = None,
    ) -> dict[str, Any]:
        labels = admission.label_matcher(label_selector)
        fields = admission.field_matcher(field_selector, rt.kind)
        after = _continue_key(continue_token) if continue_token else None
        with self.store.lock:
            rv = self.store.resource_version
            page, last, remaining = self.store.read_page(
                rt.group,
                rt.plural,
                namespace if rt.namespaced and namespace else None,
                where=None if labels is None and fields is None else lambda o: matches(o, labels, fields),
                after=after,
                limit=max(limit, 0),
            )  # copies the page's objects only
        items = [self._out(rt, o) for o in page]
        list_meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if limit > 0 and last is not None:
            list_meta["continue"] = base64.b64encode(json.dumps({"start": list(last), "rv": rv}).encode()).decode()
            if labels is None and fields is None:  # kube-apiserver counts keys, so only when no selector filters them
                list_meta["remainingItemCount"] = remaining
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": list_meta, "items": items}

    # -- update / patch ------------------------------------------------------------------------
    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: dict[str, Any],
        subresource: str | None = None,
        *,
        dry_run: bool = False,
        strict: bool = False,
        expect_rv: str | None = None,
        owned: bool = False,
    ) -> dict[str, Any]:
        """Replace the object (or its status) with `body`; `owned`: `body` is the caller's to consume (no copy).
        `expect_rv`: raise Changed unless the stored object is still at that resourceVersion (the object
        admission webhooks were shown)."""
        new = body if owned else copy.deepcopy(body)
        self._check_type(rt, new)
        if strict:
            admission.reject_unknown_fields(rt, new)
        nm = meta(new)
        if nm.get("name") and nm["name"] != name:
            raise errors.bad_request(f"the name of the object ({nm['name']}) does not match the name on the URL ({name})")
        with self.store.lock:
            old = self.read(rt, namespace, name)
            om = meta(old)
            if expect_rv is not None and om.get("resourceVersion") != expect_rv:
                raise Changed(name)
            if nm.get("resourceVersion") and nm["resourceVersion"] != om.get("resourceVersion"):
                raise errors.conflict(rt.plural, name, rt.group)
            if nm.get("uid") and nm["uid"] != om.get("uid"):
                raise errors.conflict(
                    rt.plural,
                    name,
                    rt.group,
                    f"Precondition failed: UID in precondition: {nm['uid']}, UID in object meta: {om.get('uid')}",
                )
            if subresource == "status":
                merged = copy.deepcopy(old)
                if "status" in new:
                    merged["status"] = new["status"]
                else:
                    merged.pop("status", None)
                new = merged
            else:
                for k in (
                    "uid",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generation",
                    "namespace",
                    "name",
                ):
                    if k in om:
                        nm[k] = om[k]
                    else:
                        nm.pop(k, None)
                if rt.has_status():
                    if "status" in old:
                        new["status"] = copy.deepcopy(old["status"])
                    else:
                        new.pop("status", None)
                kinds.convert(rt, new)
                admission.default_object(rt, new)
                if self.mutate(rt, new, old):
                    admission.default_object(rt, new)
                if rt.group == "" and rt.plural == "services":
                    nodeports.patch_allocated(new, old)
                    nodeports.drop_unneeded(new, old)
                if rt.has_generation and (
                    body_of(new, without_status=rt.has_status()) != body_of(old, without_status=rt.has_status())
                ):
                    nm["generation"] = int(om.get("generation") or 0) + 1
            self._out(rt, new)
            if om.get("deletionTimestamp"):
                added = set(meta(new).get("finalizers") or []) - set(om.get("finalizers") or [])
                if added:
                    raise errors.invalid(
                        rt.kind,
                        name,
                        [
                            errors.Cause(
                                "FieldValueForbidden",
                                "Forbidden: no new finalizers can be added if the object is being "
                                "deleted, found new finalizers " + json.dumps(sorted(added)),
                                "metadata.finalizers",
                            )
                        ],
                        rt.group,
                    )
            admission.validate_object(rt, new, old)
            if rt.group == "" and rt.plural == "services" and subresource is None:
                nodeports.allocate_update(
                    new,
                    old,
                    nodeports.in_use(
                        self.store.index_values(nodeports.NODE_PORT_INDEX, skip=(rt.group, rt.plural, namespace or "", name))
                    ),
                )
            if same_ignoring_rv(new, old):
                return old
            meta(new).pop("managedFields", None)
            if dry_run:
                meta(new)["resourceVersion"] = om.get("resourceVersion")
                return new
            stored = self._out(rt, self.store.write(rt.group, rt.plural, new))
            self._after_write(rt, stored)
            sm = meta(stored)
            if sm.get("deletionTimestamp") and not sm.get("finalizers"):
                self.on_finalized(rt, stored)
            return stored

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: bytes,
        content_type: str,
        subresource: str | None = None,
        *,
        dry_run: bool = False,
        strict: bool = False,
        expect_rv: str | None = None,
    ) -> dict[str, Any]:
        if content_type == "application/apply-patch+yaml":
            return self._apply(rt, namespace, name, body, dry_run, strict, expect_rv)
        with self.store.lock:
            old = self.read(rt, namespace, name)
            patched = admission.patch_object(old, body, content_type, rt)
            return self.update(
                rt, namespace, name, patched, subresource, dry_run=dry_run, strict=strict, expect_rv=expect_rv, owned=True
            )

    def _apply(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: bytes,
        dry_run: bool,
        strict: bool,
        expect_rv: str | None = None,
    ) -> dict[str, Any]:
        """Server-side apply, approximated: create when absent, else merge the applied config (no field owners)."""
        with self.store.lock:
            if self.store.read(rt.group, rt.plural, self._ns(rt, namespace), name) is not None:
                old = self.read(rt, namespace, name)
                return self.update(
                    rt,
                    namespace,
                    name,
                    admission.patch_object(old, body, "application/apply-patch+yaml", rt),
                    dry_run=dry_run,
                    strict=strict,
                    expect_rv=expect_rv,
                    owned=True,
                )
            if expect_rv:
                raise Changed(name)
            try:
                doc = yaml.safe_load(body.decode("utf-8"))
            except (yaml.YAMLError, UnicodeDecodeError) as exc:
                raise errors.bad_request(f"error decoding YAML: {exc}") from None
            if not isinstance(doc, dict):
                raise errors.bad_request("error decoding YAML: the body is not an object")
            meta(doc)["name"] = name
            return self.create(rt, namespace, doc, dry_run=dry_run, strict=strict)


class Changed(Exception):
    """The object changed since admission saw it: admit again (kube-apiserver's GuaranteedUpdate retry)."""


def _continue_key(token: str) -> tuple[str, str]:
    """The (namespace, name) a continue token resumes after (like kube-apiserver's, it names the last key sent)."""
    try:
        namespace, name = json.loads(base64.b64decode(token))["start"]
        return str(namespace), str(name)
    except (ValueError, KeyError, TypeError):
        raise errors.bad_request("continue key is not valid: illegal base64 data") from None


def matches(obj: dict[str, Any], labels: Any, fields: Any) -> bool:
    """Whether `obj` passes parsed label and field selectors (None passes everything)."""
    if labels is not None and not labels.matches((obj.get("metadata") or {}).get("labels") or {}):
        return False
    if fields is not None and not fields.matches(obj):
        return False
    return True
