"""rollout/reach.py: where a Service port sends traffic on its member's pod, and when the member is unreachable
through it (Kubernetes' targetPort rules: a number, a name the pod's ports resolve, else the port itself)."""

from __future__ import annotations

from gitops_kd.rollout.model import Unreachable
from gitops_kd.rollout.reach import container_ports, service_pod, target_ports, unreachable_member

POD = (("hello-http", 8080),)


def test_target_ports_follow_kubernetes_rules() -> None:
    assert target_ports([{"port": 8080}], POD) == (8080,)  # no targetPort: the port (KubeDirector sets none)
    assert target_ports([{"port": 80, "targetPort": 8080}], POD) == (8080,)
    assert target_ports([{"port": 80, "targetPort": "hello-http"}], POD) == (8080,)
    assert target_ports([{"port": 80, "targetPort": "nope"}], POD) == (0,)  # a name the pod does not declare
    assert target_ports([{"port": 80, "targetPort": "8081"}], POD) == (8081,)


def test_a_member_is_unreachable_when_its_service_targets_other_ports_than_its_pod_declares() -> None:
    assert unreachable_member("p-0", "s-p-0", [{"port": 8080, "targetPort": 8080}], POD) is None
    assert unreachable_member("p-0", "s-p-0", [{"port": 8081, "targetPort": 8081}], POD) == Unreachable(
        "p-0", "s-p-0", (8081,), (8080,)
    )
    # a port the pod declares but the Service does not expose is a mismatch too (KubeDirector exposes each one)
    both = (("hello-http", 8080), ("admin", 9090))
    assert unreachable_member("p-0", "s-p-0", [{"port": 8080}], both) == Unreachable("p-0", "s-p-0", (8080,), (8080, 9090))
    assert unreachable_member("p-0", "s-p-0", [{"port": 8080}], ()) is None  # nothing known of what it listens on


def test_record_round_trip_and_words() -> None:
    u = Unreachable("p-0", "s-p-0", (0, 8081), (8080,))
    assert Unreachable.from_obj(u.to_obj()) == u
    assert u.describe() == "p-0: Service s-p-0 targets port(s) (unknown name), 8081 but the pod listens on 8080"


def test_container_ports_and_the_selected_pod() -> None:
    container = {"ports": [{"name": "hello-http", "containerPort": 8080}, {"containerPort": "x"}, {"containerPort": 22}]}
    assert container_ports(container) == (("hello-http", 8080), ("", 22))
    assert service_pod({"spec": {"selector": {"statefulset.kubernetes.io/pod-name": "p-0"}}}) == "p-0"
    assert service_pod({"spec": {"clusterIP": "None", "selector": {"kubedirector.hpe.com/headless": "c"}}}) is None
