"""KDCluster `spec.app` switches KubeDirector's live-app-upgrade branch refuses, with its answer (pkg/validator
types.go), shared by the embedded KubeDirector's tests and the differential test against the real branch."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

TEMPLATE = Path(__file__).resolve().parents[3] / "repo-template"
DENIED = 'admission webhook "hard-validate-cr.kubedirector.hpe.com" denied the request: \n'


def hello() -> dict[str, Any]:
    """repo-template's hello 1.0.0 KDApp."""
    return dict(yaml.safe_load((TEMPLATE / "apps" / "hello.yaml").read_text()))


def candidate(
    name: str, version: str = "2.0.0", image: str = "gitops-kd/hello:2.0.0", edit: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """hello with another name, version and image (what the branch admits as a switch target), then ``edit``."""
    app = copy.deepcopy(hello())
    app["metadata"] = {"name": name}
    app["spec"]["version"], app["spec"]["defaultImageRepoTag"] = version, image
    if edit is not None:
        edit(app["spec"])
    return app


def _label(spec: dict[str, Any]) -> None:
    spec["label"] = {**spec["label"], "description": "changed"}


def _cardinality(spec: dict[str, Any]) -> None:
    spec["roles"][1]["cardinality"] = "3+"  # hello-dev runs 2 workers


def _distro(spec: dict[str, Any]) -> None:
    spec["distroID"] = "gitops-kd/other"


def _package(spec: dict[str, Any]) -> None:
    spec["defaultConfigPackage"] = {"packageURL": "file:///opt/configscripts/hello-setup.tgz"}


# (target app, KubeDirector's answer); the cluster runs hello 1.0.0 (upgradable) with 1 controller and 2 workers
REFUSED_SWITCHES: dict[str, tuple[dict[str, Any], str]] = {
    "too-different": (
        candidate("hello-label", edit=_label),
        "The candidate app hello-label spec is too different from the actual app hello spec. Currently "
        "the potential differences are only for role image tags and cardinality.",
    ),
    "not-newer": (
        candidate("hello-old", version="0.9.0"),
        "The candidate app version 0.9.0 is not newer than version 1.0.0 that is already running at the current cluster.",
    ),
    "cardinality": (
        candidate("hello-card", edit=_cardinality),
        "The candidate app hello-card worker role cardinality doesn't satisfy the current cluster worker "
        "role active members count",
    ),
    "package-without-image": (
        candidate("hello-pkg", image="gitops-kd/hello:1.0.0", edit=_package),
        "As role controller spec was changed its image also must be changed",
    ),
    "distro": (
        candidate("hello-distro", edit=_distro),
        "Invalid application with distroId: gitops-kd/other. Expected application with distroId: "
        "gitops-kd/hello\nThe candidate app hello-distro spec is too different from the actual app hello spec. "
        "Currently the potential differences are only for role image tags and cardinality.",
    ),
}
NOT_UPGRADABLE = "The application gitops-kd/hello of version 1.0.0 doesn't support live upgrade."
