"""The names in gitops_kd.constants and kd.layout are the ones the packaged CRDs define."""

from __future__ import annotations

from gitops_kd import constants
from gitops_kd.crds import KDROLLOUT_CRD, load_crd
from gitops_kd.kd import layout
from kdcrds import KDAPP_CRD, KDCLUSTER_CRD, kubedirector_crd


def test_the_kdrollout_crd_serves_the_names_gitops_kd_writes() -> None:
    crd = load_crd(KDROLLOUT_CRD)
    spec = crd["spec"]
    assert spec["group"] == constants.GROUP
    assert spec["names"]["kind"] == constants.ROLLOUT_KIND
    assert spec["names"]["plural"] == constants.ROLLOUT_PLURAL
    assert [v["name"] for v in spec["versions"] if v.get("served")] == [constants.ROLLOUT_VERSION]
    assert constants.ROLLOUT_API_VERSION == f"{spec['group']}/{constants.ROLLOUT_VERSION}"
    status = spec["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert tuple(status["phase"]["enum"]) == constants.ROLLOUT_PHASES


def test_kubedirectors_crds_serve_the_names_of_the_layout() -> None:
    for filename, kind, plural in (
        (KDAPP_CRD, layout.KDAPP_KIND, layout.KDAPP_PLURAL),
        (KDCLUSTER_CRD, layout.KDCLUSTER_KIND, layout.KDCLUSTER_PLURAL),
    ):
        spec = kubedirector_crd(filename)["spec"]
        assert (spec["names"]["kind"], spec["names"]["plural"]) == (kind, plural)
        versions = [v["name"] for v in spec["versions"] if v.get("storage")]
        assert layout.API_VERSION == f"{spec['group']}/{versions[0]}"
