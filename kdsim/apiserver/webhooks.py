"""Validating admission webhooks: calls the stored ValidatingWebhookConfigurations as kube-apiserver does.

Each matching webhook gets an AdmissionReview admission.k8s.io/v1 over HTTPS, verified with its caBundle
(the system roots when empty). clientConfig.url is used as is. clientConfig.service {namespace, name, port, path}
has no cluster network to reach here, so the address is resolved on loopback: one of the ready addresses of the
Endpoints object of that name, at random for each call as kube-proxy spreads a Service's connections (with the
port named like the Service port, else its subset's only port), else the Service's targetPort on 127.0.0.1.
The TLS server name stays `NAME.NAMESPACE.svc` and error messages name the URL the real server would dial
(https://NAME.NAMESPACE.svc:PORT/PATH?timeout=Ns), so certificates and wording are the real ones.
Answers and failures follow k8s.io/apiserver/pkg/admission/plugin/webhook (ToStatusErr, ErrCallingWebhook).
"""

from __future__ import annotations

import asyncio
import base64
import errno
import json
import logging
import random
import ssl
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from kdsim import errors
from kdsim.apiserver import webhook_match
from kdsim.apiserver.registry import Registry
from kdsim.apiserver.resources import ResourceType
from kdsim.apiserver.storage import Store

log = logging.getLogger(__name__)

GROUP, PLURAL = "admissionregistration.k8s.io", "validatingwebhookconfigurations"
# Never sent to webhooks, so a bad webhook cannot lock its own configuration in (apiserver's IsExemptAdmission).
EXEMPT = {
    (GROUP, "validatingwebhookconfigurations"),
    (GROUP, "mutatingwebhookconfigurations"),
    (GROUP, "validatingadmissionpolicies"),
    (GROUP, "validatingadmissionpolicybindings"),
}
OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


@dataclass(frozen=True)
class UserInfo:
    """The requester as a webhook sees it (review.request.userInfo)."""

    username: str
    groups: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"username": self.username, "groups": list(self.groups)}


def user_info(token: str, impersonate_user: str = "", impersonate_groups: tuple[str, ...] = ()) -> UserInfo:
    """Tokens are not checked, so the token is the user name (`system:serviceaccount:NS:NAME` is that service
    account, with its groups); `kubectl --as/--as-group` (Impersonate-User/-Group headers) override it."""
    name = impersonate_user or token
    if not name:
        return UserInfo("system:anonymous", ("system:unauthenticated",))
    groups = list(impersonate_groups) if impersonate_user else []
    if name.startswith("system:serviceaccount:") and name.count(":") == 3:
        ns = name.split(":")[2]
        groups += ["system:serviceaccounts", f"system:serviceaccounts:{ns}"]
    return UserInfo(name, tuple(dict.fromkeys([*groups, "system:authenticated"])))


@dataclass(frozen=True)
class Attributes:
    """One write request as admission sees it."""

    rt: ResourceType
    operation: str
    namespace: str
    name: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    user: UserInfo
    subresource: str = ""
    dry_run: bool = False
    options: dict[str, Any] | None = None
    patch: bool = False


@dataclass(frozen=True)
class Builtin:
    """A webhook served inside the API server (an emulated component's, e.g. KubeDirector's): its defaulted
    configuration entry and `answer(request) -> AdmissionResponse` called in place of the HTTPS call."""

    webhook: dict[str, Any]
    answer: Callable[[dict[str, Any]], dict[str, Any]]


class CallError(Exception):
    """kube-apiserver's ErrCallingWebhook: the call failed (not a denial)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f'failed calling webhook "{name}": {reason}')


class Dispatcher:
    """Finds the webhooks a request reaches and calls them; raises the denial or failure as an ApiError."""

    def __init__(self, store: Store, registry: Registry, builtins: Sequence[Builtin] = ()) -> None:
        self.store, self.registry, self.builtins = store, registry, tuple(builtins)
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._session: aiohttp.ClientSession | None = None  # one per server: connections are kept alive

    async def close(self) -> None:
        """Close the client session (the API server's cleanup)."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _webhooks(self) -> list[tuple[dict[str, Any], Builtin | None]]:
        out: list[tuple[dict[str, Any], Builtin | None]] = [(b.webhook, b) for b in self.builtins]
        for config in sorted(self.store.read_all(GROUP, PLURAL), key=lambda c: str(c["metadata"]["name"])):
            for w in config.get("webhooks") or []:
                out.append((webhook_match.defaulted(w), None))
        return out

    def may_apply(self, rt: ResourceType) -> bool:
        """Cheap pre-check: the resource is not exempt, and a webhook configuration exists or a built-in
        webhook names the resource."""
        if (rt.group, rt.plural) in EXEMPT:
            return False
        return self.store.count(GROUP, PLURAL) > 0 or any(
            rt.plural in r.get("resources", ()) and rt.group in r.get("apiGroups", ())
            for b in self.builtins
            for r in b.webhook.get("rules") or []
        )

    def _match_request(self, a: Attributes) -> webhook_match.Request:
        labels: dict[str, str] = {}
        if a.rt.namespaced:
            ns = self.store.read("", "namespaces", "", a.namespace) or {}
            labels = dict((ns.get("metadata") or {}).get("labels") or {})
        return webhook_match.Request(
            operation=a.operation,
            group=a.rt.group,
            version=a.rt.version,
            resource=a.rt.plural,
            subresource=a.subresource,
            namespaced=a.rt.namespaced,
            namespace=a.namespace,
            obj=a.obj,
            old=a.old,
            namespace_labels=labels,
        )

    async def admit(self, a: Attributes) -> list[str]:
        """Call every matching webhook (concurrently, as the real server does); the warnings they return."""
        if not self.may_apply(a.rt):
            return []
        req = self._match_request(a)
        others = [t.version for t in self.registry.versions_of(a.rt.group, a.rt.plural) if t.version != a.rt.version]
        calls = []
        for w, builtin in self._webhooks():
            version = webhook_match.rules_match(w, req, others)
            if version is None or not webhook_match.selectors_match(w, req):
                continue
            if a.dry_run and w.get("sideEffects") not in ("None", "NoneOnDryRun"):
                raise errors.bad_request(f'admission webhook "{w.get("name")}" does not support dry run')
            calls.append(self._one(w, a, version, builtin))
        warnings: list[str] = []
        failure: BaseException | None = None
        for result in await asyncio.gather(*calls, return_exceptions=True):
            if isinstance(result, errors.ApiError):
                warnings.extend(result.warnings)
            if isinstance(result, BaseException):
                failure = failure or result
            else:
                warnings.extend(result)
        if isinstance(failure, errors.ApiError):
            failure.warnings = warnings
        if failure is not None:
            raise failure
        return warnings

    async def _one(self, w: dict[str, Any], a: Attributes, version: str, builtin: Builtin | None) -> list[str]:
        name = str(w.get("name", ""))
        try:
            body = review(a, version)
            response = builtin.answer(body["request"]) if builtin is not None else await self._call(w, body)
        except CallError as exc:
            if w.get("failurePolicy") == "Ignore":
                log.warning("Failed calling webhook, failing open %s: %s", name, exc)
                return []
            log.warning("Failed calling webhook, failing closed %s: %s", name, exc)
            raise errors.ApiError(
                500, "InternalError", f"Internal error occurred: {exc}", {"causes": [{"message": str(exc)}]}
            ) from None
        warnings = [str(x) for x in response.get("warnings") or []]
        if response.get("allowed") is True:
            return warnings
        err = denial(name, response.get("status"))
        err.warnings = warnings
        raise err

    def _target(self, w: dict[str, Any]) -> tuple[str, str, str | None]:
        """(URL named in messages, URL dialled, TLS server name override)."""
        cc = w.get("clientConfig") or {}
        timeout = f"?timeout={int(w.get('timeoutSeconds', 10))}s"
        if cc.get("url"):
            return cc["url"] + timeout, cc["url"] + timeout, None
        svc = cc.get("service") or {}
        ns, svc_name, port, path = (
            str(svc.get("namespace", "")),
            str(svc.get("name", "")),
            int(svc.get("port", 443)),
            str(svc.get("path") or ""),
        )
        shown = f"https://{svc_name}.{ns}.svc:{port}{path}{timeout}"
        address = self._resolve(ns, svc_name, port)
        if address is None:
            raise CallError(str(w.get("name", "")), f'Post "{shown}": dial tcp: lookup {svc_name}.{ns}.svc: no such host')
        return shown, f"https://{address}{path}{timeout}", f"{svc_name}.{ns}.svc"

    def _ssl_context(self, name: str, bundle: str) -> ssl.SSLContext:
        """The client context trusting `bundle` (base64 PEM; the system roots when empty), built once per bundle."""
        ctx = self._contexts.get(bundle)
        if ctx is None:
            try:
                ctx = (
                    ssl.create_default_context(cadata=base64.b64decode(bundle).decode())
                    if bundle
                    else ssl.create_default_context()
                )
            except (ValueError, ssl.SSLError) as exc:
                raise CallError(name, f"could not get REST client: unable to load root certificates: {exc}") from None
            if len(self._contexts) > 64:
                self._contexts.clear()
            self._contexts[bundle] = ctx
        return ctx

    def _resolve(self, namespace: str, name: str, port: int) -> str | None:
        service = self.store.read("", "services", namespace, name)
        if service is None:
            return None
        svc_port = next((p for p in (service.get("spec") or {}).get("ports") or [] if p.get("port") == port), None)
        if svc_port is None:
            return None
        endpoints = self.store.read("", "endpoints", namespace, name) or {}
        ready = []
        for subset in endpoints.get("subsets") or []:
            addresses, ports = subset.get("addresses") or [], subset.get("ports") or []
            chosen = next(
                (p for p in ports if p.get("name", "") == svc_port.get("name", "")), ports[0] if len(ports) == 1 else None
            )
            if chosen:
                ready += [f"{a.get('ip')}:{chosen.get('port')}" for a in addresses]
        if ready:
            return random.choice(ready)  # kube-proxy spreads connections to a Service over its ready endpoints
        target = svc_port.get("targetPort", port)
        return f"127.0.0.1:{target}" if isinstance(target, int) else None

    async def _call(self, w: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        name = str(w.get("name", ""))
        shown, url, server_name = self._target(w)
        ctx = self._ssl_context(name, str((w.get("clientConfig") or {}).get("caBundle") or ""))
        timeout = aiohttp.ClientTimeout(total=float(w.get("timeoutSeconds", 10)))
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession()
        try:
            async with self._session.post(url, json=body, ssl=ctx, server_hostname=server_name, timeout=timeout) as resp:
                text = await resp.text()
                if resp.status != 200:
                    raise CallError(
                        name, f'an error on the server ("{text.strip()[:200]}") has prevented the request from succeeding'
                    )
        except CallError:
            raise
        except TimeoutError:
            raise CallError(name, f'Post "{shown}": context deadline exceeded') from None
        except aiohttp.ClientConnectorCertificateError as exc:
            cert_error = exc.certificate_error
            raise CallError(
                name,
                f'Post "{shown}": tls: failed to verify certificate: x509: '
                f"{getattr(cert_error, 'verify_message', '') or cert_error}",
            ) from None
        except aiohttp.ClientConnectorError as exc:
            reason = (
                "connect: connection refused"
                if exc.os_error.errno == errno.ECONNREFUSED
                else str(exc.os_error.strerror or exc.os_error)
            )
            raise CallError(name, f'Post "{shown}": dial tcp {exc.host}:{exc.port}: {reason}') from None
        except (aiohttp.ClientError, ssl.SSLError, OSError) as exc:
            raise CallError(name, f'Post "{shown}": {exc}') from None
        return _response(name, text, str(body["request"]["uid"]))


def _response(name: str, text: str, uid: str) -> dict[str, Any]:
    try:
        review_out = json.loads(text)
    except ValueError as exc:
        raise CallError(name, f"received invalid webhook response: {exc}") from None
    if not isinstance(review_out, dict) or (review_out.get("apiVersion"), review_out.get("kind")) != (
        "admission.k8s.io/v1",
        "AdmissionReview",
    ):
        got = review_out if not isinstance(review_out, dict) else f"{review_out.get('apiVersion')}, Kind={review_out.get('kind')}"
        raise CallError(
            name,
            "received invalid webhook response: expected webhook response of "
            f"admission.k8s.io/v1, Kind=AdmissionReview, got {got}",
        )
    response = review_out.get("response")
    if not isinstance(response, dict):
        raise CallError(name, "received invalid webhook response: webhook response was absent")
    if response.get("uid") != uid:
        raise CallError(name, f'received invalid webhook response: expected response.uid="{uid}", got "{response.get("uid")}"')
    return response


def denial(name: str, status: Any) -> errors.ApiError:
    """ToStatusErr: the webhook's status with code >= 400 (400 when lower), its message prefixed."""
    result = status if isinstance(status, dict) else {}
    code = int(result.get("code") or 0)
    code = code if code >= 400 else 400
    denied_by = f'admission webhook "{name}" denied the request'
    if result.get("message"):
        message = f"{denied_by}: {result['message']}"
    elif result.get("reason"):
        message = f"{denied_by}: {result['reason']}"
    else:
        message = f"{denied_by} without explanation"
    details = result.get("details") if isinstance(result.get("details"), dict) else None
    return errors.ApiError(code, str(result.get("reason") or ""), message, details)


def review(a: Attributes, version: str) -> dict[str, Any]:
    """The AdmissionReview v1 request body for one webhook (kind/resource at the version it matched)."""
    rt = a.rt
    request_kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    request_resource = {"group": rt.group, "version": rt.version, "resource": rt.plural}
    api_version = f"{rt.group}/{version}" if rt.group else version

    def at_version(obj: dict[str, Any] | None) -> dict[str, Any] | None:
        if obj is None:
            return None
        return {**obj, "apiVersion": api_version}

    options_kind = "PatchOptions" if a.patch else OPTIONS_KIND.get(a.operation, "")
    options = {**(a.options or {}), "kind": options_kind, "apiVersion": "meta.k8s.io/v1"} if options_kind else None
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {**request_kind, "version": version},
        "resource": {**request_resource, "version": version},
        "requestKind": request_kind,
        "requestResource": request_resource,
        "name": a.name,
        "operation": a.operation,
        "userInfo": a.user.to_dict(),
        "object": at_version(a.obj),
        "oldObject": at_version(a.old),
        "dryRun": a.dry_run,
        "options": options,
    }
    if a.subresource:
        request["subResource"] = request["requestSubResource"] = a.subresource
    if rt.namespaced:
        request["namespace"] = a.namespace
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
