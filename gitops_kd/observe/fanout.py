"""NamespacedInformers: one Informer per namespace of a set, behind the Informer surface the collector uses."""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Mapping
from typing import Any

from kubernetes.client import ApiClient

from kubeplumb.informer import Handler, Informer, Transform


class NamespacedInformers:
    """Watches `plural` in each of `namespaces` (one list+watch each, as a namespaced Role allows);
    `get` routes by namespace, `list` merges, handlers see every namespace's events."""

    def __init__(
        self,
        api_client: ApiClient,
        api_version: str,
        plural: str,
        *,
        namespaces: Iterable[str],
        label_selector: str | None = None,
        resync_seconds: float | None = None,
        transform: Transform | None = None,
    ) -> None:
        self.api_version = api_version
        self.plural = plural
        self.namespaces = tuple(sorted(set(namespaces)))
        if not self.namespaces:
            raise ValueError("NamespacedInformers needs at least one namespace")
        self.label_selector = label_selector
        self._by_ns: dict[str, Informer] = {
            ns: Informer(
                api_client,
                api_version,
                plural,
                namespace=ns,
                label_selector=label_selector,
                resync_seconds=resync_seconds,
                transform=transform,
            )
            for ns in self.namespaces
        }

    @property
    def members(self) -> Mapping[str, Informer]:
        """The informer of each namespace (read-only use)."""
        return dict(self._by_ns)

    def add_handler(self, fn: Handler) -> None:
        for informer in self._by_ns.values():
            informer.add_handler(fn)

    def start(self) -> None:
        for informer in self._by_ns.values():
            informer.start()

    def stop(self, timeout: float = 5.0) -> None:
        for informer in self._by_ns.values():
            informer.stop(timeout)

    def wait_synced(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        return all(
            i.wait_synced(None if deadline is None else max(0.0, deadline - time.monotonic())) for i in self._by_ns.values()
        )

    @property
    def synced(self) -> bool:
        return all(i.synced for i in self._by_ns.values())

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The cached object, or None (also for a namespace outside the set)."""
        informer = self._by_ns.get(namespace or "")
        return informer.get(namespace, name) if informer is not None else None

    def shared(self, namespace: str | None = None) -> builtins.list[Mapping[str, Any]]:
        """The cached objects themselves (read-only), like Informer.shared, over the set's namespaces."""
        if namespace is not None:
            informer = self._by_ns.get(namespace)
            return informer.shared(namespace) if informer is not None else []
        return [obj for ns in self.namespaces for obj in self._by_ns[ns].shared(ns)]

    def list(self, namespace: str | None = None, label_selector: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """Objects of `namespace` (every namespace of the set if None), sorted by (namespace, name)."""
        if namespace is not None:
            informer = self._by_ns.get(namespace)
            return informer.list(namespace, label_selector) if informer is not None else []
        return [obj for ns in self.namespaces for obj in self._by_ns[ns].list(ns, label_selector)]
