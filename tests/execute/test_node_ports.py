"""keep_node_ports: the Service port patch carries the live nodePort of every port that stays (#18)."""

from __future__ import annotations

from gitops_kd.execute.workload import keep_node_ports

LIVE = [
    {"name": "http", "port": 8080, "protocol": "TCP", "targetPort": 8080, "nodePort": 31413},
    {"name": "admin", "port": 9090, "protocol": "TCP", "targetPort": 9090, "nodePort": 30001},
]


def test_a_port_that_stays_by_name_keeps_its_node_port_even_when_its_number_changes() -> None:
    desired = [{"name": "http", "port": 8081, "targetPort": 8081}, {"name": "admin", "port": 9090}]
    assert [p.get("nodePort") for p in keep_node_ports(desired, LIVE)] == [31413, 30001]


def test_a_new_port_gets_none_and_a_given_node_port_is_kept() -> None:
    desired = [{"name": "metrics", "port": 9100}, {"name": "http", "port": 8080, "nodePort": 32000}]
    assert [p.get("nodePort") for p in keep_node_ports(desired, LIVE)] == [None, 32000]


def test_renamed_port_matches_by_number_and_protocol_but_not_across_protocols() -> None:
    desired = [{"name": "web", "port": 8080}, {"name": "admin-udp", "port": 9090, "protocol": "UDP"}]
    assert [p.get("nodePort") for p in keep_node_ports(desired, LIVE)] == [31413, None]


def test_a_name_match_wins_over_a_number_match_and_each_live_port_is_used_once() -> None:
    desired = [{"name": "x", "port": 8080}, {"name": "http", "port": 7000}, {"name": "y", "port": 8080}]
    assert [p.get("nodePort") for p in keep_node_ports(desired, LIVE)] == [None, 31413, None]


def test_unnamed_ports_and_a_cluster_ip_service() -> None:
    live = [{"port": 80, "protocol": "TCP", "nodePort": 30080}]
    assert keep_node_ports([{"port": 80}], live) == [{"port": 80, "nodePort": 30080}]
    no_node_ports = [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert keep_node_ports([{"name": "http", "port": 8080}], no_node_ports) == [{"name": "http", "port": 8080}]


def test_the_input_is_not_changed() -> None:
    desired = [{"name": "http", "port": 8080}]
    keep_node_ports(desired, LIVE)
    assert desired == [{"name": "http", "port": 8080}]
