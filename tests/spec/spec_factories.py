"""Builders of small KDApp/KDCluster documents for the spec tests (plain dicts, dumped to YAML)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from gitops_kd.spec import FieldError, KDApp, KDCluster, SpecError, load_manifests

APP: dict[str, Any] = {
    "apiVersion": "kubedirector.hpe.com/v1beta1",
    "kind": "KubeDirectorApp",
    "metadata": {"name": "kafka"},
    "spec": {
        "label": {"name": "Kafka"},
        "distroID": "demo/kafka",
        "version": "1.0",
        "configSchemaVersion": 8,
        "defaultImageRepoTag": "demo/kafka:1.0",
        "defaultPersistDirs": ["/var/lib/kafka"],
        "services": [
            {"id": "broker", "endpoint": {"port": 9092}},
            {"id": "ui", "endpoint": {"port": 8080, "urlScheme": "http", "isDashboard": True}},
        ],
        "roles": [
            {"id": "controller", "cardinality": "1"},
            {"id": "broker", "cardinality": "3+", "persistDirs": ["/var/lib/kafka", "/opt/kafka/conf"]},
        ],
        "config": {
            "selectedRoles": ["controller", "broker"],
            "roleServices": [
                {"roleID": "controller", "serviceIDs": ["ui"]},
                {"roleID": "broker", "serviceIDs": ["broker"]},
            ],
        },
    },
}

CLUSTER: dict[str, Any] = {
    "apiVersion": "kubedirector.hpe.com/v1beta1",
    "kind": "KubeDirectorCluster",
    "metadata": {"name": "kafka-dev"},
    "spec": {
        "app": "kafka",
        "roles": [
            {"id": "controller", "members": 1, "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
            {
                "id": "broker",
                "members": 3,
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                "storage": {"size": "10Gi", "storageClassName": "fast"},
            },
        ],
    },
}

UPGRADE: dict[str, Any] = {
    "roleOrder": ["broker"],
    "from": [
        {
            "versions": ">=1.0.0 <2.0.0",
            "persistDirs": {
                "/etc/kafka": "keep",
                "/opt/kafka/conf": "discard",
                "/var/lib/kafka": {"migrate": {"command": ["/bin/sh", "-c", "true"], "timeoutSeconds": 30}},
            },
            "default": "keep",
        },
        {"versions": "0.x", "default": "discard"},
    ],
    "downgrade": {"to": [{"versions": "^1.0.0", "persistDirs": {"/var/lib/kafka": "restore"}}]},
    "hooks": {"postUpgrade": {"command": ["/bin/sh", "-c", "echo ok"], "roles": ["broker"]}},
    "gate": {"exec": {"command": ["/bin/true"]}, "periodSeconds": 1, "timeoutSeconds": 60},
    "podReadyTimeoutSeconds": 120,
    "failurePolicy": "halt",
}


def app_doc(**spec_changes: Any) -> dict[str, Any]:
    """A valid app document with spec keys replaced (None removes a key)."""
    doc = copy.deepcopy(APP)
    for key, value in spec_changes.items():
        if value is None:
            doc["spec"].pop(key, None)
        else:
            doc["spec"][key] = value
    return doc


def cluster_doc(**spec_changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(CLUSTER)
    doc["spec"].update(spec_changes)
    return doc


def dump(*docs: dict[str, Any]) -> bytes:
    return yaml.safe_dump_all(docs, sort_keys=False).encode()


def load(path: str, *docs: dict[str, Any]) -> list[KDApp | KDCluster]:
    return load_manifests(path, dump(*docs))


def refusals(path: str, data: bytes) -> list[FieldError]:
    """The errors load_manifests raises for the data (fails the test if it loads)."""
    with pytest.raises(SpecError) as info:
        load_manifests(path, data)
    return list(info.value.errors)
