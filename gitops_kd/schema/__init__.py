"""CRD structural-schema validation for the spec model: violations and unknown fields, worded as kube-apiserver does."""

from gitops_kd.schema.openapi import Violation, unknown_fields, validate

__all__ = ["Violation", "unknown_fields", "validate"]
