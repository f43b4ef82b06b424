"""gitops_kd.kd.layout holds the same KubeDirector facts as the embedded cluster's KubeDirector."""

from __future__ import annotations

import pytest

from gitops_kd.kd import layout
from gitops_kd.sim.kubedirector import names

SHARED = [n for n in dir(names) if n.isupper()]


@pytest.mark.parametrize("name", SHARED)
def test_constant_matches_the_simulated_kubedirector(name: str) -> None:
    assert getattr(layout, name) == getattr(names, name)


@pytest.mark.parametrize("args", [("my.Cluster_x", "role", "CrNameRole"), ("c", "r", "UID"), ("x" * 60, "r", "CrNameRole")])
def test_naming_matches(args) -> None:
    assert layout.statefulset_generate_name(*args) == names.statefulset_generate_name(*args)
    assert layout.headless_generate_name(args[0], args[2]) == names.headless_generate_name(args[0], args[2])
    assert layout.member_service_name("kdss-a-0", args[2]) == names.member_service_name("kdss-a-0", args[2])
    assert layout.member_pvc_name("kdss-a-0") == names.member_pvc_name("kdss-a-0")
    assert layout.mung_object_name(args[0]) == names.mung_object_name(args[0])


def test_service_port_name() -> None:
    assert layout.service_port_name("ui", "HTTP") == "http-ui"
    assert layout.service_port_name("broker", None) == layout.service_port_name("broker", "") == "generic-broker"
