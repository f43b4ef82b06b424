"""Raw-dict REST calls to the embedded API server, over the official client's configured connection pool.

The official client's ApiClient carries the server URL, the CA and the bearer token read from the
kubeconfig; this module sends plain JSON through its urllib3 pool, so it depends on no generated API
class. Errors are `kubernetes.client.exceptions.ApiException` with `.status` and the metav1.Status `.body`.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"


def resource_path(api_version: str, plural: str, namespace: str | None = None, name: str | None = None,
                  subresource: str | None = None) -> str:
    """URL path of a collection or object: `/api/v1/namespaces/ns/pods/x/status`, `/apis/apps/v1/statefulsets`."""
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    path = base + (f"/namespaces/{namespace}" if namespace else "") + f"/{plural}"
    if name is not None:
        path += f"/{name}"
        if subresource:
            path += f"/{subresource}"
    return path


def _error(resp: Any, data: bytes) -> ApiException:
    exc = ApiException(status=resp.status, reason=resp.reason)
    exc.body = data.decode("utf-8", "replace")
    exc.headers = resp.headers
    return exc


class WatchStream:
    """An open watch: iterate to get event dicts; `close()` (from any thread) ends the iteration."""

    def __init__(self, response: Any) -> None:
        self._resp = response
        self._closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        buffer = bytearray()
        try:
            for chunk in self._resp.stream(amt=None, decode_content=False):
                buffer.extend(chunk)
                while (nl := buffer.find(b"\n")) != -1:
                    line, buffer = bytes(buffer[:nl]).strip(), buffer[nl + 1:]
                    if line:
                        yield json.loads(line)
                if self._closed:
                    return
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
            self._resp.release_conn()
        except Exception:  # noqa: BLE001 - closing a dead connection may fail in many ways
            pass


class RestClient:
    """JSON get/list/create/replace/patch/delete/watch on any resource of the embedded API server, as dicts."""

    def __init__(self, api_client: ApiClient, *, timeout: float = 30.0) -> None:
        self._config = api_client.configuration
        self._pool: urllib3.PoolManager = api_client.rest_client.pool_manager
        self.timeout = timeout

    def _send(self, method: str, path: str, query: Mapping[str, Any] | None, body: Any, content_type: str,
              read_timeout: float | None) -> Any:
        params = {k: v for k, v in (query or {}).items() if v is not None}
        url = self._config.host + path + (f"?{urlencode(params)}" if params else "")
        headers = {"Accept": JSON}
        for auth in self._config.auth_settings().values():
            if auth.get("in") == "header" and auth.get("value"):
                headers[auth["key"]] = auth["value"]
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        return self._pool.request(method, url, body=data, headers=headers, preload_content=False, retries=False,
                                  timeout=urllib3.Timeout(connect=self.timeout, read=read_timeout))

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                content_type: str = JSON) -> dict[str, Any]:
        """One request; the decoded JSON body. Raises ApiException for a non-2xx answer."""
        resp = self._send(method, path, query, body, content_type, self.timeout)
        try:
            data = resp.read()
        finally:
            resp.release_conn()
        if not 200 <= resp.status <= 299:
            raise _error(resp, data)
        result: dict[str, Any] = json.loads(data) if data else {}
        return result

    def get(self, api_version: str, plural: str, namespace: str | None, name: str) -> dict[str, Any]:
        return self.request("GET", resource_path(api_version, plural, namespace, name))

    def get_or_none(self, api_version: str, plural: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object, or None when the server says 404."""
        try:
            return self.get(api_version, plural, namespace, name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, api_version: str, plural: str, namespace: str | None = None, *,
             label_selector: str | None = None) -> dict[str, Any]:
        """The List object (items + metadata.resourceVersion)."""
        return self.request("GET", resource_path(api_version, plural, namespace),
                            query={"labelSelector": label_selector})

    def create(self, api_version: str, plural: str, namespace: str | None, body: Mapping[str, Any]) -> dict[str, Any]:
        return self.request("POST", resource_path(api_version, plural, namespace), body=dict(body))

    def replace(self, api_version: str, plural: str, namespace: str | None, name: str, body: Mapping[str, Any],
                subresource: str | None = None) -> dict[str, Any]:
        return self.request("PUT", resource_path(api_version, plural, namespace, name, subresource), body=dict(body))

    def patch(self, api_version: str, plural: str, namespace: str | None, name: str, patch: Any, *,
              subresource: str | None = None) -> dict[str, Any]:
        """A JSON merge patch."""
        return self.request("PATCH", resource_path(api_version, plural, namespace, name, subresource),
                            body=patch, content_type=MERGE_PATCH)

    def delete(self, api_version: str, plural: str, namespace: str | None, name: str, *,
               grace_period_seconds: int | None = None, propagation_policy: str | None = None,
               uid: str | None = None) -> dict[str, Any]:
        """DELETE with optional DeleteOptions; returns the server's answer (object or Status)."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if uid is not None:
            options["preconditions"] = {"uid": uid}
        return self.request("DELETE", resource_path(api_version, plural, namespace, name), body=options)

    def watch(self, api_version: str, plural: str, namespace: str | None, *, resource_version: str | None,
              label_selector: str | None, timeout_seconds: int) -> WatchStream:
        """Open a watch (with bookmarks) from resource_version; raises ApiException if the server refuses it."""
        query = {"watch": "true", "resourceVersion": resource_version, "labelSelector": label_selector,
                 "timeoutSeconds": timeout_seconds, "allowWatchBookmarks": "true"}
        resp = self._send("GET", resource_path(api_version, plural, namespace), query, None, JSON,
                          timeout_seconds + 30)
        if not 200 <= resp.status <= 299:
            data = resp.read()
            resp.release_conn()
            raise _error(resp, data)
        return WatchStream(resp)
