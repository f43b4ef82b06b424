"""Object metadata checks shared by KDApp and KDCluster: name, namespace, labels, annotations."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gitops_kd.spec.reader import Reader

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_MSG = "must be a DNS-1123 label: at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit"


@dataclass(frozen=True)
class Metadata:
    """The parts of metadata the spec model uses."""

    name: str
    namespace: str | None
    labels: dict[str, str]
    annotations: dict[str, str]


def check_dns_label(reader: Reader, value: str, field: str) -> None:
    """Record an error unless value is a DNS-1123 label."""
    if len(value) > 63 or not DNS1123_LABEL.match(value):
        reader.error(field, f'"{value}" {LABEL_MSG}')


def read_metadata(reader: Reader, doc: Mapping[str, Any], name_rule: str) -> Metadata | None:
    """Read metadata; ``name_rule`` is "label" (DNS-1123 label) or "subdomain" (max 63 as the CRD says)."""
    meta = reader.get_map(doc, "metadata", "", required=True)
    if meta is None:
        return None
    name = reader.get_str(meta, "name", "metadata", required=True)
    if "generateName" in meta:
        reader.error("metadata.generateName", "not supported: a desired object needs a fixed metadata.name")
    namespace = reader.get_str(meta, "namespace", "metadata")
    if namespace is not None:
        check_dns_label(reader, namespace, "metadata.namespace")
    labels = reader.get_string_map(meta, "labels", "metadata")
    annotations = reader.get_string_map(meta, "annotations", "metadata")
    if name:
        if name_rule == "label":
            check_dns_label(reader, name, "metadata.name")
        elif len(name) > 63 or not DNS1123_SUBDOMAIN.match(name):
            reader.error(
                "metadata.name",
                f'"{name}" must be a lowercase DNS-1123 name of at most 63 characters '
                "(letters, digits, '-' and '.', starting and ending with a letter or digit)",
            )
    if name is None or name == "":
        return None
    return Metadata(name, namespace, labels, annotations)
