"""Detect the installed KubeDirector flavour by reading its two CRDs (the observe edge of gitops_kd.kd.flavour)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from gitops_kd.kd.flavour import UNKNOWN, Flavour, flavour_of
from gitops_kd.kd.layout import API_GROUP, KDAPP_PLURAL, KDCLUSTER_PLURAL
from kubeplumb.rest import RestClient

CRD_API = "apiextensions.k8s.io/v1"
CRD_PLURAL = "customresourcedefinitions"
REFRESH_SECONDS = 10.0  # how old the flavour a snapshot carries may be (KubeDirector is rarely swapped)


def _crd(rest: RestClient, plural: str) -> dict[str, Any] | None:
    try:
        return rest.get_or_none(CRD_API, CRD_PLURAL, None, f"{plural}.{API_GROUP}")
    except ApiException as exc:
        if exc.status in (401, 403):
            return None  # not allowed to read CRDs: unknown
        raise


def detect(rest: RestClient) -> Flavour:
    """The flavour the API server's KubeDirector CRDs show (UNKNOWN when one is missing or unreadable)."""
    return flavour_of(_crd(rest, KDAPP_PLURAL), _crd(rest, KDCLUSTER_PLURAL))


class FlavourCache:
    """The installed flavour for each observed snapshot and for the GitOpsKDSource record: read from the CRDs at
    most every ``seconds``; a read that fails keeps the last answer (before the first, UNKNOWN saying why), so
    neither a snapshot nor a poll's record fails on it."""

    def __init__(
        self, api_client: ApiClient, seconds: float = REFRESH_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rest, self._seconds, self._clock = RestClient(api_client), seconds, clock
        self._flavour = Flavour(UNKNOWN, "not read yet")
        self._known = False
        self._read_at: float | None = None
        self._lock = threading.Lock()

    def current(self) -> Flavour:
        with self._lock:
            now = self._clock()
            if self._read_at is None or now - self._read_at >= self._seconds:
                self._read_at = now
                try:
                    self._flavour, self._known = detect(self._rest), True
                except Exception as exc:  # noqa: BLE001 - an unreachable API server shows elsewhere; keep the last answer
                    if not self._known:
                        said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                        self._flavour = Flavour(UNKNOWN, f"not read: {said}")
            return self._flavour

    def name(self) -> str:
        """The flavour's name (gitops_kd.kd.flavour), as each snapshot carries it."""
        return self.current().name

    def describe(self) -> str:
        """The flavour said for the GitOpsKDSource status (`gitops-kd status` shows it)."""
        return self.current().describe()


__all__ = ["FlavourCache", "detect"]
