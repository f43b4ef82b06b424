"""The emulator's KubeDirector names objects exactly as KubeDirector does (pkg/executor/util.go)."""

from __future__ import annotations

from kdsim.kubedirector import names as layout


def test_uid_naming_scheme_uses_kd_prefixes() -> None:
    assert layout.statefulset_generate_name("c", "r", "UID") == "kdss-"
    assert layout.headless_generate_name("c", "UID") == "kdhs-"
    assert layout.member_service_name("kdss-abcde-0", "UID") == "s-kdss-abcde-0"
    assert layout.member_pvc_name("kdss-abcde-0") == "p-kdss-abcde-0"


def test_cr_name_role_scheme_munges_and_truncates() -> None:
    assert layout.statefulset_generate_name("my.Cluster_x", "role", "CrNameRole") == "my-cluster-x-role-"
    assert layout.headless_generate_name("my.Cluster_x", "CrNameRole") == "my-cluster-x"
    assert layout.member_service_name("my-cluster-x-role-abcde-0", "CrNameRole") == "my-cluster-x-role-abcde-0"
    long = layout.statefulset_generate_name("x" * 60, "r", "CrNameRole")
    assert long == "x" * layout.NAME_LENGTH_LIMIT + "-"
