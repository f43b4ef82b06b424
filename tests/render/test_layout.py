"""gitops_kd.kd.layout names objects exactly as KubeDirector does (pkg/executor/util.go)."""

from __future__ import annotations

from gitops_kd.kd import layout


def test_service_port_name() -> None:
    assert layout.service_port_name("ui", "HTTP") == "http-ui"
    assert layout.service_port_name("broker", None) == layout.service_port_name("broker", "") == "generic-broker"
