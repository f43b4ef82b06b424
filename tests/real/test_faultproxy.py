"""FaultProxy.classify reads a request as kube-apiserver's request info does (verb, resource, name, group), which is
what the fault rules match; the proxy itself is exercised by tests/real/test_fault_matrix.py."""

from __future__ import annotations

import pytest

from tests.real.faultproxy import classify


@pytest.mark.parametrize(
    ("method", "target", "expected"),
    [
        ("PATCH", "/apis/apps/v1/namespaces/s-1/statefulsets/kdss-x", ("patch", "statefulsets", "kdss-x", "apps")),
        (
            "PUT",
            "/apis/gitops-kd.io/v1alpha1/namespaces/s-1/kdrollouts/hello-dev/status",
            ("update", "kdrollouts/status", "hello-dev", "gitops-kd.io"),
        ),
        ("POST", "/api/v1/namespaces/s-1/events", ("create", "events", "", "")),
        ("GET", "/api/v1/namespaces/s-1/pods/kdss-x-0/exec?command=sh&stdout=1", ("get", "pods/exec", "kdss-x-0", "")),
        ("POST", "/api/v1/namespaces/s-1/pods/kdss-x-0/exec?command=sh", ("create", "pods/exec", "kdss-x-0", "")),
        ("DELETE", "/api/v1/namespaces/s-1/pods/kdss-x-0", ("delete", "pods", "kdss-x-0", "")),
        ("DELETE", "/api/v1/namespaces/s-1/configmaps?labelSelector=a", ("deletecollection", "configmaps", "", "")),
        (
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/gitops-kd-system/leases/gitops-kd",
            ("update", "leases", "gitops-kd", "coordination.k8s.io"),
        ),
        ("GET", "/api/v1/namespaces/s-1", ("get", "namespaces", "s-1", "")),
        ("DELETE", "/api/v1/namespaces/s-1", ("delete", "namespaces", "s-1", "")),
        (
            "GET",
            "/apis/kubedirector.hpe.com/v1beta1/kubedirectorclusters?watch=1",
            ("get", "kubedirectorclusters", "", "kubedirector.hpe.com"),
        ),
    ],
)
def test_a_request_is_read_as_the_api_server_reads_it(method: str, target: str, expected: tuple[str, str, str, str]) -> None:
    assert classify(method, target) == expected
