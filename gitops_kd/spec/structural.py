"""Structural validation of a document against KubeDirector's CRD openAPIV3Schema (apiserver wording)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from kdcrds import KDAPP_CRD, KDCLUSTER_CRD, kubedirector_crd
from kubeplumb.structural import unknown_fields, validate

_CRD_FILES = {"KubeDirectorApp": KDAPP_CRD, "KubeDirectorCluster": KDCLUSTER_CRD}


@lru_cache(maxsize=4)
def _schema(kind: str) -> dict[str, Any]:
    crd = kubedirector_crd(_CRD_FILES[kind])
    versions = crd["spec"]["versions"]
    version = next((v for v in versions if v.get("storage")), versions[0])
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def structural_errors(kind: str, doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, reason) for every schema violation and unknown field; spec.upgrade is gitops-kd's own."""
    obj = copy.deepcopy(dict(doc))
    spec = obj.get("spec")
    if kind == "KubeDirectorApp" and isinstance(spec, dict):
        spec.pop("upgrade", None)
    schema = _schema(kind)
    found = [(v.path, _reason(v.path, v.message)) for v in validate(schema, obj)]
    found += [(path, f'unknown field "{path.rsplit(".", 1)[-1]}"') for path in unknown_fields(schema, obj)]
    return found


def _reason(path: str, message: str) -> str:
    prefix = f"{path}: "
    return message[len(prefix) :] if path and message.startswith(prefix) else message
