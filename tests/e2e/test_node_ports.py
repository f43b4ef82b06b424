"""Member Services keep their nodePorts across a live upgrade that changes the Service port and across the
revert of a hand edit that renamed the port (invariant: a client using a NodePort never loses it) (#18)."""

from __future__ import annotations

import json

from tests.e2e.harness import CLUSTER_LABEL, E2E, NS, wait_for


def _node_ports(e2e: E2E) -> dict[str, list[tuple[str, int, int]]]:
    """Member Service name -> [(port name, port, nodePort)] (the headless cluster Service has none)."""
    out = {}
    for svc in e2e.rest.list("v1", "services", NS, label_selector=CLUSTER_LABEL)["items"]:
        if svc["spec"].get("clusterIP") == "None":
            continue
        out[svc["metadata"]["name"]] = [(p.get("name"), p["port"], p.get("nodePort")) for p in svc["spec"]["ports"]]
    return out


def test_node_ports_survive_an_upgrade_with_a_port_change_and_a_drift_revert(e2e: E2E) -> None:
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    before = _node_ports(e2e)
    assert before and all(30000 <= np <= 32767 for ports in before.values() for _, _, np in ports)
    assert all(port == 8080 for ports in before.values() for _, port, _ in ports)

    e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    e2e.wait_ready_at("2.0.0", timeout=120)
    e2e.wait_settled()
    upgraded = _node_ports(e2e)
    assert {s: [(n, np) for n, _, np in ports] for s, ports in upgraded.items()} == {
        s: [(n, np) for n, _, np in ports] for s, ports in before.items()
    }
    assert all(port == 8081 for ports in upgraded.values() for _, port, _ in ports)

    # A hand edit renames the port (a JSON patch keeps its nodePort). The real server patches a nodePort left
    # out of an update by port NAME only, so the revert keeps it only if the controller sends it.
    service, ports = next(iter(upgraded.items()))
    edited = e2e.kubectl(
        "patch",
        "service",
        service,
        "--type",
        "json",
        "-p",
        json.dumps([{"op": "replace", "path": "/spec/ports/0/name", "value": "renamed"}]),
        "-o",
        "json",
    )
    assert edited.returncode == 0, edited.stderr
    port = json.loads(edited.stdout)["spec"]["ports"][0]
    assert (port["name"], port["nodePort"]) == ("renamed", ports[0][2])
    wait_for("the port rename reverted", lambda: _node_ports(e2e)[service][0][0] == ports[0][0], 30)
    e2e.wait_settled()
    assert _node_ports(e2e) == upgraded
