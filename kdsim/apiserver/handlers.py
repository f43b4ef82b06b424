"""HTTP handlers of the resource API: verb dispatch, bodies, Table negotiation, subresources, faults."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import yaml
from aiohttp import web

from kdsim import errors
from kdsim.apiserver import admission, dryrun, kubelet_proxy, paths, protobuf, reviews, upgrade_proxy, watch, webhooks
from kdsim.apiserver.access import AccessEntry, user_from_authorization
from kdsim.apiserver.faults import ANSWER_LOST, LOST, FaultRule, error_for
from kdsim.apiserver.meta import meta
from kdsim.apiserver.objects import Changed
from kdsim.apiserver.resources import ResourceType
from kdsim.apiserver.tables import to_table

if TYPE_CHECKING:
    from kdsim.apiserver.server import ApiServer

log = logging.getLogger(__name__)
PodHandler = Callable[[web.Request, str, str], Awaitable[web.StreamResponse]]


def json_response(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.Response(status=status, text=json.dumps(body, separators=(",", ":")), content_type="application/json")


def error_response(err: errors.ApiError) -> web.Response:
    return json_response(err.to_status(), err.code)


def _wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return "as=Table" in accept and "g=meta.k8s.io" in accept


def _verb(method: str, p: paths.ApiPath, query: dict[str, str]) -> str:
    if method == "GET":
        if p.name:
            return "get"
        return "watch" if p.watch or query.get("watch") in ("1", "true", "True") else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete" if p.name else "deletecollection"}.get(
        method, ""
    )


def _selected_name(verb: str, query: dict[str, str], kind: str) -> str:
    """The name RequestInfo gives a list or watch whose fieldSelector requires metadata.name=X (its first such
    term), so RBAC's resourceNames apply to it (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go), else ""."""
    if verb not in ("list", "watch") or not query.get("fieldSelector"):
        return ""
    try:
        terms = admission.field_matcher(query["fieldSelector"], kind).terms
    except errors.ApiError:
        return ""  # the request itself answers 400
    return next((t.value for t in terms if t.field == "metadata.name" and not t.negated), "")


BODY_TYPES = ("application/json", "application/yaml")
DELETE_OPTIONS = "DeleteOptions"  # the body of a DELETE (JSON, or protobuf from clients such as helm)


async def _json_body(request: web.Request, kind: str = "") -> dict[str, Any]:
    """The request's JSON (or YAML) object; protobuf (kubectl 1.32+ creates built-ins in it) for the kinds
    kdsim.apiserver.protobuf decodes. Any other media type is a 415, as on a real server."""
    ctype = request.content_type if request.headers.get("Content-Type") else "application/json"
    if ctype == protobuf.PROTOBUF and kind in protobuf.KINDS:
        try:
            return protobuf.decode(await request.read(), kind)
        except protobuf.ProtobufError as exc:
            raise errors.bad_request(f"error decoding request body: {exc}") from None
    if ctype not in BODY_TYPES:
        raise errors.unsupported_media_type(BODY_TYPES)
    raw = await request.read()
    try:
        body = yaml.safe_load(raw or b"{}") if ctype == "application/yaml" else json.loads(raw or b"{}")
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"error decoding request body: {exc}") from None
    if not isinstance(body, dict):
        raise errors.bad_request("error decoding request body: expected a JSON object")
    return body


def warned(response: web.Response, warnings: list[str]) -> web.Response:
    """Add the webhooks' warnings as `Warning: 299 - "text"` headers (what kubectl prints as "Warning: text")."""
    for text in warnings:
        quoted = text.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{quoted}"')
    return response


class ResourceHandlers:
    """Serves /api/... and /apis/... resource paths for one ApiServer."""

    def __init__(self, server: ApiServer) -> None:
        self.server = server

    async def handle(self, request: web.Request) -> web.StreamResponse:
        p = paths.parse(request.path)
        if p is None:
            return error_response(errors.ApiError(404, "NotFound", "the server could not find the requested resource"))
        rt = self.server.registry.lookup(p.group, p.version, p.plural)
        if (
            rt is None
            or (p.namespace is not None and not rt.namespaced)
            or (p.subresource and p.subresource not in rt.subresources)
        ):
            return error_response(errors.ApiError(404, "NotFound", "the server could not find the requested resource"))
        query = dict(request.query)
        verb = _verb(request.method, p, query)
        if not verb or (p.subresource in ("status", "scale") and verb not in ("get", "update", "patch")):
            raise errors.method_not_allowed()
        self.server.stats.record(verb, p.resource)
        user = user_from_authorization(request.headers.get("Authorization"))
        self.server.access.record(
            AccessEntry(
                user=user,
                verb=verb,
                group=p.group,
                resource=p.plural,
                subresource=p.subresource or "",
                namespace=p.namespace or "",
                name=p.name or _selected_name(verb, query, rt.kind),
            )
        )
        log.debug("%s %s -> %s %s", request.method, request.path_qs, verb, p.resource)
        rule = self.server.faults.take(verb, p.resource, user)
        if rule is not None and rule.kind == LOST:
            return await self._lose_answer(request, rt, p, verb, query, user, rule)
        if rule is not None:
            if rule.kind == "timeout":
                await asyncio.sleep(rule.delay)
            raise error_for(
                rule,
                rt.plural,
                p.name or "",
                rt.group,
                verb=verb,
                user=user,
                namespace=p.namespace or "",
                rbac_resource=p.resource,
            )
        return await self._serve(request, rt, p, verb, query, user)

    async def _lose_answer(
        self,
        request: web.Request,
        rt: ResourceType,
        p: paths.ApiPath,
        verb: str,
        query: dict[str, str],
        user: str,
        rule: FaultRule,
    ) -> web.StreamResponse:
        """Carry the request out, then lose its answer: 504 after the rule's delay (what a client whose own timeout
        fired sees of a write the server applied); an exec runs, then its connection is closed before its output
        and exit status (by the in-process exec handler: a proxied one cannot be cut after its command)."""
        if p.subresource == "exec":
            if self.server.exec_handler is None:
                raise errors.bad_request(
                    f'injected fault "{LOST}" on pods/exec: only the in-process kubelet can '
                    "lose an exec's answer (this pod's exec is proxied to its node)"
                )
            token = ANSWER_LOST.set(True)
            try:
                return await self._serve(request, rt, p, verb, query, user)
            finally:
                ANSWER_LOST.reset(token)
        with contextlib.suppress(errors.ApiError):
            await self._serve(request, rt, p, verb, query, user)
        await asyncio.sleep(rule.delay)
        raise error_for(rule, rt.plural, p.name or "", rt.group)

    async def _serve(
        self, request: web.Request, rt: ResourceType, p: paths.ApiPath, verb: str, query: dict[str, str], user: str
    ) -> web.StreamResponse:
        """The request past authentication and fault injection: streams, subresources, reviews, then the verb."""
        if p.subresource in ("exec", "attach", "log", "portforward"):
            return await self._pod_stream(request, rt, p)
        if p.subresource == "binding":
            if verb != "create":
                raise errors.method_not_allowed()
            return json_response(
                self._bind(rt, p, await _json_body(request), dryrun.requested(verb, request.query.getall("dryRun", []))), 201
            )
        if p.subresource == "scale":
            return await self._scale(
                request, rt, p, verb, verb != "get" and dryrun.requested(verb, request.query.getall("dryRun", []))
            )
        if reviews.is_review(rt):
            if verb != "create" or p.name:
                raise errors.method_not_allowed()
            requester = webhooks.user_info(
                user, request.headers.get("Impersonate-User", ""), tuple(request.headers.getall("Impersonate-Group", []))
            )
            return json_response(reviews.answer(rt, await _json_body(request, rt.kind), requester), 201)
        return await self._verb(request, rt, p, verb, query)

    async def _verb(
        self, request: web.Request, rt: ResourceType, p: paths.ApiPath, verb: str, query: dict[str, str]
    ) -> web.StreamResponse:
        objects, table = self.server.objects, _wants_table(request)
        include = query.get("includeObject", "Metadata")
        if rt.namespaced and p.name and p.namespace is None:
            raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
        if verb == "get":
            obj = objects.read(rt, p.namespace, p.name or "")
            return json_response(to_table(rt, [obj], include_object=include) if table else obj)
        if verb == "watch":
            wr = watch.WatchRequest(
                rt=rt,
                namespace=p.namespace,
                resource_version=query.get("resourceVersion", ""),
                label_selector=query.get("labelSelector"),
                field_selector=query.get("fieldSelector"),
                timeout=float(query.get("timeoutSeconds") or 1800),
                bookmarks=query.get("allowWatchBookmarks") in ("1", "true", "True"),
                send_initial_events=query.get("sendInitialEvents") == "true",
                table=table,
                include_object=include,
            )
            return await watch.serve(request, wr, self.server.store, self.server.hub, self.server.bookmark_interval)
        if verb == "list":
            listing = objects.list(
                rt,
                p.namespace,
                label_selector=query.get("labelSelector"),
                field_selector=query.get("fieldSelector"),
                limit=int(query.get("limit") or 0),
                continue_token=query.get("continue"),
            )
            if table:
                return json_response(to_table(rt, listing["items"], include_object=include, list_meta=listing["metadata"]))
            return json_response(listing)
        dry_values, strict = request.query.getall("dryRun", []), query.get("fieldValidation") == "Strict"
        if verb in ("create", "update", "patch"):
            return await self._write(request, rt, p, verb, query, dryrun.requested(verb, dry_values), strict)
        if verb == "delete":
            return await self._delete(request, rt, p, query, dry_values)
        if verb == "deletecollection":
            options = await _json_body(request, DELETE_OPTIONS) if request.can_read_body else {}
            dry_run = dryrun.of_delete(verb, options, dry_values)
            if "propagationPolicy" in query:
                options.setdefault("propagationPolicy", query["propagationPolicy"])
            if self.server.webhooks.may_apply(rt):  # each item is admitted as a DELETE, as kube-apiserver does
                listing = objects.list(
                    rt, p.namespace, label_selector=query.get("labelSelector"), field_selector=query.get("fieldSelector")
                )
                for item in listing["items"]:
                    await self.server.webhooks.admit(
                        self._attributes(request, rt, p, "DELETE", None, item, dry_run, dict(options))
                    )
            items = self.server.deleter.delete_collection(
                rt,
                p.namespace,
                label_selector=query.get("labelSelector"),
                field_selector=query.get("fieldSelector"),
                options=options,
                dry_run=dry_run,
            )
            return json_response(
                {
                    "kind": rt.list_kind,
                    "apiVersion": rt.api_version,
                    "metadata": {"resourceVersion": str(self.server.store.resource_version)},
                    "items": items,
                }
            )
        raise errors.method_not_allowed()

    async def _write(
        self,
        request: web.Request,
        rt: ResourceType,
        p: paths.ApiPath,
        verb: str,
        query: dict[str, str],
        dry_run: bool,
        strict: bool,
    ) -> web.StreamResponse:
        """create / update / patch, through the validating webhooks when some may apply: the result is
        computed as a dry run, shown to the webhooks (no lock held), then written only if the object did not
        change meanwhile (else admitted again, like GuaranteedUpdate's retry)."""
        objects, hooks, name = self.server.objects, self.server.webhooks, p.name or ""
        gated = hooks.may_apply(rt)
        if verb == "create":
            if p.name:
                raise errors.method_not_allowed()
            body = await _json_body(request, rt.kind)
            warnings: list[str] = []
            if gated:
                new = objects.create(rt, p.namespace, body, dry_run=True, strict=strict)
                meta(body)["name"] = meta(new)["name"]
                warnings = await hooks.admit(self._attributes(request, rt, p, "CREATE", new, None, dry_run))
                if dry_run:
                    return warned(json_response(new, 201), warnings)
            return warned(json_response(objects.create(rt, p.namespace, body, dry_run=dry_run, strict=strict), 201), warnings)
        raw = await request.read()
        ctype = request.content_type
        if verb == "patch" and ctype == "application/apply-patch+yaml" and p.subresource:
            raise errors.bad_request("server-side apply is not supported on subresources by the embedded cluster")
        update_body = await _json_body(request, rt.kind) if verb == "update" else {}

        def write(dry: bool, expect_rv: str | None) -> dict[str, Any]:
            if verb == "update":
                return objects.update(
                    rt, p.namespace, name, update_body, p.subresource, dry_run=dry, strict=strict, expect_rv=expect_rv
                )
            return objects.patch(
                rt, p.namespace, name, raw, ctype, p.subresource, dry_run=dry, strict=strict, expect_rv=expect_rv
            )

        if not gated:
            return json_response(write(dry_run, None))
        for _ in range(5):
            current = objects.read(rt, p.namespace, name) if objects.exists(rt, p.namespace, name) else None
            new = write(True, None)
            operation = "UPDATE" if current is not None else "CREATE"
            warnings = await hooks.admit(
                self._attributes(request, rt, p, operation, new, current, dry_run, patch=verb == "patch")
            )
            if dry_run:
                return warned(json_response(new), warnings)
            try:
                return warned(json_response(write(False, meta(current).get("resourceVersion") if current else None)), warnings)
            except Changed:
                continue
        raise errors.conflict(rt.plural, name, rt.group)

    async def _delete(
        self, request: web.Request, rt: ResourceType, p: paths.ApiPath, query: dict[str, str], dry_values: list[str]
    ) -> web.StreamResponse:
        """DELETE of one object, its options from the body or else the query; a dry run is admitted (dryRun true)
        and answers what the delete would, leaving the object as it is."""
        objects, hooks, name = self.server.objects, self.server.webhooks, p.name or ""
        options = await _json_body(request, DELETE_OPTIONS) if request.can_read_body else {}
        dry_run = dryrun.of_delete("delete", options, dry_values)
        for key in ("propagationPolicy", "gracePeriodSeconds", "orphanDependents"):
            if key in query and key not in options:
                val: Any = query[key]
                options[key] = int(val) if key == "gracePeriodSeconds" else (val == "true" if key == "orphanDependents" else val)
        warnings: list[str] = []
        if hooks.may_apply(rt):
            old = objects.read(rt, p.namespace, name)
            warnings = await hooks.admit(self._attributes(request, rt, p, "DELETE", None, old, dry_run, dict(options)))
        body, _ = self.server.deleter.delete(rt, p.namespace, name, options, dry_run=dry_run)
        return warned(json_response(body, 200), warnings)

    def _attributes(
        self,
        request: web.Request,
        rt: ResourceType,
        p: paths.ApiPath,
        operation: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        dry_run: bool,
        options: dict[str, Any] | None = None,
        patch: bool = False,
    ) -> webhooks.Attributes:
        user = webhooks.user_info(
            user_from_authorization(request.headers.get("Authorization")),
            request.headers.get("Impersonate-User", ""),
            tuple(request.headers.getall("Impersonate-Group", [])),
        )
        m = meta(obj if obj is not None else old or {})
        return webhooks.Attributes(
            rt=rt,
            operation=operation,
            namespace=str(p.namespace or m.get("namespace") or ""),
            name=str(m.get("name") or p.name or ""),
            obj=obj,
            old=old,
            user=user,
            subresource=p.subresource or "",
            dry_run=dry_run,
            options=options,
            patch=patch,
        )

    async def _pod_stream(self, request: web.Request, rt: ResourceType, p: paths.ApiPath) -> web.StreamResponse:
        pod = self.server.objects.read(rt, p.namespace, p.name or "")
        handler: PodHandler | None = {"log": self.server.log_handler, "portforward": self.server.portforward_handler}.get(
            p.subresource or "", self.server.exec_handler
        )
        if handler is not None:
            return await handler(request, p.namespace or "", p.name or "")
        # no kubelet in process: proxy to the pod's node's kubelet endpoint, as kube-apiserver does
        ns, name = p.namespace or "", p.name or ""
        container = (
            ""
            if p.subresource == "portforward"
            else kubelet_proxy.resolve_container(pod, name, request.query.get("container") or "")
        )
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            if p.subresource == "log":
                return web.Response(text="", content_type="text/plain")
            raise errors.bad_request(f"pod {p.name} does not have a host assigned")
        base = kubelet_proxy.kubelet_url(self.server.store.get("v1", "nodes", None, node_name), node_name)
        if p.subresource == "log":
            return await kubelet_proxy.proxy_logs(request, base, ns, name, container)
        if p.subresource == "portforward":
            return await upgrade_proxy.proxy_port_forward(request, base, ns, name)
        return await kubelet_proxy.proxy_stream(request, base, p.subresource or "exec", ns, name, container)

    def _bind(self, rt: ResourceType, p: paths.ApiPath, binding: dict[str, Any], dry_run: bool) -> dict[str, Any]:
        """POST pods/{name}/binding: assign the pod to a node (what the scheduler does); a dry run only checks."""
        node = str((binding.get("target") or {}).get("name") or "")
        if not node:
            raise errors.invalid("Binding", p.name or "", [errors.Cause("FieldValueRequired", "Required value", "target.name")])
        with self.server.store.lock:
            pod = self.server.objects.read(rt, p.namespace, p.name or "")
            current = (pod.get("spec") or {}).get("nodeName")
            if meta(pod).get("deletionTimestamp"):
                raise errors.conflict(
                    "pods/binding", p.name or "", "", f"pod {p.name} is being deleted, cannot be assigned to a host"
                )
            if current:
                raise errors.conflict("pods/binding", p.name or "", "", f'pod {p.name} is already assigned to node "{current}"')
            pod.setdefault("spec", {})["nodeName"] = node
            if not dry_run:
                self.server.store.write(rt.group, rt.plural, pod)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    async def _scale(self, request: web.Request, rt: ResourceType, p: paths.ApiPath, verb: str, dry_run: bool) -> web.Response:
        objects = self.server.objects
        if verb == "get":
            return json_response(scale_of(objects.read(rt, p.namespace, p.name or "")))
        with self.server.store.lock:
            current = objects.read(rt, p.namespace, p.name or "")
            if verb == "update":
                scale = await _json_body(request)
            elif verb == "patch":
                scale = admission.patch_object(scale_of(current), await request.read(), request.content_type, _SCALE_RT)
            else:
                raise errors.method_not_allowed()
            replicas = (scale.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid(
                    "Scale",
                    p.name or "",
                    [
                        errors.Cause(
                            "FieldValueInvalid", f"Invalid value: {replicas}: must be greater than or equal to 0", "spec.replicas"
                        )
                    ],
                    "autoscaling",
                )
            rv = meta(scale).get("resourceVersion")
            if rv and rv != meta(current).get("resourceVersion"):
                raise errors.conflict(rt.plural, p.name or "", rt.group)
            current.setdefault("spec", {})["replicas"] = replicas
            meta(current).pop("resourceVersion", None)
            updated = objects.update(rt, p.namespace, p.name or "", current, dry_run=dry_run)
        return json_response(scale_of(updated))


_SCALE_RT = ResourceType(group="autoscaling", version="v1", plural="scales", singular="scale", kind="Scale", namespaced=True)


def scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 Scale view of a StatefulSet-like object."""
    m = meta(obj)
    sel = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: m[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in m},
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(sel.items())),
        },
    }
