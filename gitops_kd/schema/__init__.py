"""Schema helpers shared by the spec model and the embedded API server (CRD structural schemas)."""

from gitops_kd.schema.openapi import Violation, default, prune, unknown_fields, validate

__all__ = ["Violation", "default", "prune", "unknown_fields", "validate"]
