"""The embedded API server takes a request head as large as kube-apiserver does (Go's MaxHeaderBytes 1 << 20):
a URL of tens of KB (an exec carrying a long command) is served, one over 1 MiB is refused."""

from __future__ import annotations

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from kdsim.httplimits import MAX_HEADER_BYTES


def test_a_url_of_tens_of_kb_is_served(api: kubernetes.client.ApiClient, ns: str) -> None:
    selector = "app notin (" + ",".join(f"v{i:05d}" for i in range(5000)) + ")"  # about 35 KB in the URL
    assert len(selector) > 30_000
    listed = kubernetes.client.CoreV1Api(api).list_namespaced_config_map(ns, label_selector=selector)
    assert listed.items == []


def test_a_url_over_the_limit_is_refused(api: kubernetes.client.ApiClient, ns: str) -> None:
    with pytest.raises(ApiException) as refused:
        kubernetes.client.CoreV1Api(api).list_namespaced_config_map(ns, label_selector="a=" + "b" * MAX_HEADER_BYTES)
    assert refused.value.status in (400, 431)
