"""Service nodePorts as kube-apiserver allocates them: range, kept on update, freed on delete, the real 422s (#18)."""

from __future__ import annotations

import json
from typing import Any

import kubernetes.client
import pytest
from apiserver_util import Kubectl
from kubernetes.client.rest import ApiException


def _svc(name: str, ports: list[dict[str, Any]], kind: str = "NodePort") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"type": kind, "ports": ports}}


def _node_ports(svc: Any) -> list[int | None]:
    return [p.node_port for p in svc.spec.ports]


def _error(exc: ApiException) -> tuple[int, str]:
    return exc.status, json.loads(exc.body)["message"]


def test_node_port_and_load_balancer_services_get_node_ports_in_range(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    a = core.create_namespaced_service(ns, _svc("a", [{"name": "http", "port": 80}, {"name": "x", "port": 81}]))
    lb = core.create_namespaced_service(ns, _svc("lb", [{"port": 80}], "LoadBalancer"))
    plain = core.create_namespaced_service(ns, _svc("plain", [{"port": 80}], "ClusterIP"))
    no_alloc = core.create_namespaced_service(
        ns,
        {
            "metadata": {"name": "noalloc"},
            "spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": False, "ports": [{"port": 80}]},
        },
    )
    ports = _node_ports(a) + _node_ports(lb)
    assert all(p is not None and 30000 <= p <= 32767 for p in ports) and len(set(ports)) == 3
    assert _node_ports(plain) == [None] and _node_ports(no_alloc) == [None]


def test_node_port_kept_on_merge_patch_by_name_and_reallocated_for_a_renamed_port(
    api: kubernetes.client.ApiClient, kubectl: Kubectl, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    first = _node_ports(core.create_namespaced_service(ns, _svc("s", [{"name": "http", "port": 8080}])))[0]
    # a JSON merge patch replaces the list: the port keeps its nodePort by name although its number changed
    kubectl(
        "patch", "svc", "s", "-n", ns, "--type", "merge", "-p", json.dumps({"spec": {"ports": [{"name": "http", "port": 8081}]}})
    )
    assert _node_ports(core.read_namespaced_service("s", ns)) == [first]
    kubectl(
        "patch", "svc", "s", "-n", ns, "--type", "merge", "-p", json.dumps({"spec": {"ports": [{"name": "web", "port": 8081}]}})
    )
    renamed = _node_ports(core.read_namespaced_service("s", ns))[0]
    assert renamed is not None and renamed != first


def test_duplicate_out_of_range_and_taken_node_ports_get_the_real_422(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    taken = _node_ports(core.create_namespaced_service(ns, _svc("a", [{"port": 80, "nodePort": 30080}])))[0]
    assert taken == 30080
    cases = {
        "b": (
            [{"port": 80, "nodePort": 30080}],
            'Service "b" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated',
        ),
        "c": (
            [{"port": 80, "nodePort": 8080}],
            'Service "c" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the '
            "valid range. The range of valid ports is 30000-32767",
        ),
        "d": (
            [{"name": "a", "port": 80, "nodePort": 31000}, {"name": "b", "port": 81, "nodePort": 31000}],
            'Service "d" is invalid: spec.ports[1].nodePort: Duplicate value: 31000',
        ),
    }
    for name, (ports, message) in cases.items():
        with pytest.raises(ApiException) as exc:
            core.create_namespaced_service(ns, _svc(name, ports))
        assert _error(exc.value) == (422, message)
        assert core.list_namespaced_service(ns, field_selector=f"metadata.name={name}").items == []
    # an update claiming another Service's nodePort is refused and leaves the Service as it was
    b = core.create_namespaced_service(ns, _svc("b", [{"port": 80}]))
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_service("b", ns, {"spec": {"ports": [{"port": 80, "nodePort": 30080}]}})
    assert _error(exc.value)[0] == 422 and "provided port is already allocated" in _error(exc.value)[1]
    assert _node_ports(core.read_namespaced_service("b", ns)) == _node_ports(b)


def test_a_deleted_services_node_port_is_free_again(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_service(ns, _svc("a", [{"port": 80, "nodePort": 31999}]))
    with pytest.raises(ApiException):
        core.create_namespaced_service(ns, _svc("b", [{"port": 80, "nodePort": 31999}]))
    core.delete_namespaced_service("a", ns)
    assert _node_ports(core.create_namespaced_service(ns, _svc("b", [{"port": 80, "nodePort": 31999}]))) == [31999]


def test_changing_the_type_to_cluster_ip_drops_the_node_ports(api: kubernetes.client.ApiClient, ns: str) -> None:
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_service(ns, _svc("a", [{"port": 80, "nodePort": 31998}]))
    assert _node_ports(core.patch_namespaced_service("a", ns, {"spec": {"type": "ClusterIP"}})) == [None]
    assert _node_ports(core.create_namespaced_service(ns, _svc("b", [{"port": 80, "nodePort": 31998}]))) == [31998]
