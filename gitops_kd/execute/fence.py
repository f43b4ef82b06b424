"""Fencing: each write and exec (executor, instance record, drift Events) first checks that the Lease is fresh."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubernetes.client import ApiClient

from gitops_kd.execute.podexec import ExecResult, PodExec
from kubeplumb.rest import JSON, RestClient

Fence = Callable[[], bool]  # True while this replica may act (leader with a renewal within the renew deadline)


class NotLeading(RuntimeError):
    """Raised instead of a write or exec when the fence says this replica no longer leads."""


def _always() -> bool:
    return True


class FencedRest(RestClient):
    """A RestClient whose writes (every verb but GET) are refused locally once the fence is down."""

    def __init__(self, api_client: ApiClient, fence: Fence = _always) -> None:
        super().__init__(api_client)
        self.fence = fence

    def request(self, method: str, path: str, *, query: Any = None, body: Any = None, content_type: str = JSON) -> dict[str, Any]:
        if method != "GET" and not self.fence():
            raise NotLeading(f"not writing {method} {path}: this replica no longer holds a fresh Lease")
        return super().request(method, path, query=query, body=body, content_type=content_type)


class FencedExec(PodExec):
    """A PodExec that starts no command once the fence is down."""

    def __init__(self, api_client: ApiClient, fence: Fence = _always) -> None:
        super().__init__(api_client)
        self.fence = fence

    def run(self, namespace: str, pod: str, container: str | None, command: Sequence[str], timeout: float) -> ExecResult:
        if not self.fence():
            raise NotLeading(f"not executing in pod {namespace}/{pod}: this replica no longer holds a fresh Lease")
        return super().run(namespace, pod, container, command, timeout)
