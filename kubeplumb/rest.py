"""Raw-dict REST access to any Kubernetes resource through the official client's ApiClient.

Usage::

    rest = RestClient(api_client)
    sts = rest.get("apps/v1", "statefulsets", "default", "web")          # dict
    rest.patch("v1", "pods", "default", "web-0", {"status": {...}}, subresource="status")
    with rest.watch("v1", "pods", "default", resource_version="42") as events:
        for event in events:            # {"type": "ADDED", "object": {...}}
            ...

Errors are `kubernetes.client.exceptions.ApiException` with `.status` and the metav1.Status `.body`,
as the generated client raises them; `status_of(exc)` / `reason_of(exc)` / `message_of(exc)` read them.
Requests go through the ApiClient's configured urllib3 pool (server, CA, client certificate, proxy) with the
headers of its `Configuration.auth_settings()` (a bearer token, refreshed by its hook): public parts that
every supported client version (kubernetes>=29) has, unlike the generated client's internal serializers.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from kubeplumb.names import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH

log = logging.getLogger(__name__)

JSON = "application/json"
_PATCH_TYPES = {"merge": MERGE_PATCH, "json": JSON_PATCH, "strategic": STRATEGIC_PATCH}


def resource_path(
    api_version: str, plural: str, namespace: str | None = None, name: str | None = None, subresource: str | None = None
) -> str:
    """URL path of a collection or object: `/api/v1/namespaces/ns/pods/x/status`, `/apis/apps/v1/statefulsets`."""
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    path = base + (f"/namespaces/{namespace}" if namespace else "") + f"/{plural}"
    if name is not None:
        path += f"/{name}"
        if subresource:
            path += f"/{subresource}"
    return path


def status_of(exc: BaseException) -> int | None:
    """HTTP status of an ApiException (None for transport errors)."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) and status > 0 else None


def message_of(exc: BaseException) -> str:
    """The metav1.Status message of an ApiException body (what the server or an admission webhook said), or ""."""
    body = getattr(exc, "body", None)
    if not body:
        return ""
    try:
        return str(json.loads(body).get("message") or "")
    except (ValueError, AttributeError):
        return ""


class WatchStream:
    """An open watch: iterate to get event dicts; `close()` (from any thread) ends the iteration."""

    def __init__(self, response: Any) -> None:
        self._resp = response
        self._closed = False

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        buffer = bytearray()
        try:
            for chunk in self._resp.stream(amt=None, decode_content=False):
                buffer.extend(chunk if isinstance(chunk, bytes) else chunk.encode())
                while (nl := buffer.find(b"\n")) != -1:
                    line, buffer = bytes(buffer[:nl]).strip(), buffer[nl + 1 :]
                    if line:
                        yield json.loads(line)
                if self._closed:
                    return
            if buffer.strip() and not self._closed:
                yield json.loads(bytes(buffer))
        except Exception:
            if self._closed:
                return
            raise

    def close(self) -> None:
        """Stop the stream, unblocking a reader in another thread."""
        if self._closed:
            return
        self._closed = True
        sock = getattr(getattr(self._resp, "connection", None), "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        try:
            self._resp.close()
            self._resp.release_conn()
        except Exception:  # noqa: BLE001 - closing a dead connection may fail in many ways
            pass


class RestClient:
    """Generic JSON REST calls (get/list/create/replace/patch/delete/watch) on any resource, as dicts."""

    def __init__(self, api_client: ApiClient, *, timeout: float = 30.0) -> None:
        self.api_client = api_client
        self.timeout = timeout

    # -- transport ---------------------------------------------------------------------------------
    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        read_timeout: float | None = None,
    ) -> Any:
        """The raw urllib3 response (not read yet)."""
        config = self.api_client.configuration
        params = [(k, _qv(v)) for k, v in (query or {}).items() if v is not None]
        url = config.host + path + (f"?{urlencode(params)}" if params else "")
        headers = {"Accept": JSON, "User-Agent": self.api_client.user_agent}
        for auth in config.auth_settings().values():
            if auth.get("in") == "header" and auth.get("value"):
                headers[auth["key"]] = auth["value"]
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        pool: urllib3.PoolManager = self.api_client.rest_client.pool_manager
        return pool.request(
            method,
            url,
            body=data,
            headers=headers,
            preload_content=False,
            retries=False,
            timeout=urllib3.Timeout(connect=self.timeout, read=read_timeout),
        )

    def request(
        self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None, content_type: str = JSON
    ) -> dict[str, Any]:
        """One request; the decoded JSON body. Raises ApiException for a non-2xx answer."""
        resp = self._send(method, path, query=query, body=body, content_type=content_type, read_timeout=self.timeout)
        try:
            data = resp.read()
        finally:
            resp.release_conn()
        if not 200 <= resp.status <= 299:
            raise _api_error(resp, data)
        result: dict[str, Any] = json.loads(data) if data else {}
        return result

    # -- verbs -------------------------------------------------------------------------------------
    def get(
        self, api_version: str, plural: str, namespace: str | None, name: str, subresource: str | None = None
    ) -> dict[str, Any]:
        return self.request("GET", resource_path(api_version, plural, namespace, name, subresource))

    def get_or_none(self, api_version: str, plural: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object, or None when the server says 404."""
        try:
            return self.get(api_version, plural, namespace, name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def list(
        self,
        api_version: str,
        plural: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> dict[str, Any]:
        """The List object (items + metadata.resourceVersion); with ``limit``, one page of it (metadata.continue
        names the next)."""
        return self.request(
            "GET",
            resource_path(api_version, plural, namespace),
            query={
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "resourceVersion": resource_version,
                "limit": limit,
                "continue": continue_token,
            },
        )

    def create(self, api_version: str, plural: str, namespace: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        return self.request("POST", resource_path(api_version, plural, namespace), body=dict(body))

    def replace(
        self,
        api_version: str,
        plural: str,
        namespace: str | None,
        name: str,
        body: Mapping[str, Any],
        subresource: str | None = None,
    ) -> dict[str, Any]:
        return self.request("PUT", resource_path(api_version, plural, namespace, name, subresource), body=dict(body))

    def patch(
        self,
        api_version: str,
        plural: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """PATCH with patch_type "merge" (default), "json" or "strategic"."""
        return self.request(
            "PATCH",
            resource_path(api_version, plural, namespace, name, subresource),
            body=patch,
            content_type=_PATCH_TYPES[patch_type],
        )

    def delete(
        self,
        api_version: str,
        plural: str,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        uid: str | None = None,
    ) -> dict[str, Any]:
        """DELETE with optional DeleteOptions; returns the server's answer (object or Status)."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if uid is not None:
            options["preconditions"] = {"uid": uid}
        return self.request("DELETE", resource_path(api_version, plural, namespace, name), body=options)

    def watch(
        self,
        api_version: str,
        plural: str,
        namespace: str | None = None,
        *,
        resource_version: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
    ) -> WatchStream:
        """Open a watch from resource_version; raises ApiException if the server refuses it outright."""
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "timeoutSeconds": timeout_seconds,
            "allowWatchBookmarks": "true" if allow_bookmarks else None,
        }
        read_timeout = (timeout_seconds + 30) if timeout_seconds else None
        resp = self._send("GET", resource_path(api_version, plural, namespace), query=query, read_timeout=read_timeout)
        if not 200 <= resp.status <= 299:
            data = resp.read()
            resp.release_conn()
            raise _api_error(resp, data)
        return WatchStream(resp)


def _api_error(resp: Any, data: bytes) -> ApiException:
    """The ApiException the generated client would raise for this answer (status, reason, body, headers)."""
    exc = ApiException(status=resp.status, reason=resp.reason)
    exc.body = data.decode("utf-8", "replace")
    exc.headers = resp.headers
    return exc


def _qv(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
