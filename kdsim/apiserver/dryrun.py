"""The dryRun option of a write, read and checked as kube-apiserver does (apimachinery ValidateDryRun)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kdsim import errors

ALL = "All"
_OPTIONS_KIND = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
    "deletecollection": "DeleteOptions",
}


def requested(verb: str, values: Sequence[Any]) -> bool:
    """Whether a write with these dryRun values (query parameters, or DeleteOptions.dryRun) is a dry run; any value
    but "All" is a 422 on the verb's options kind, worded as kube-apiserver's."""
    if not values:
        return False
    bad = [v for v in values if v != ALL]
    if bad:
        shown = "[]string{" + ", ".join(json.dumps(str(v)) for v in values) + "}"
        raise errors.invalid(
            _OPTIONS_KIND.get(verb, "CreateOptions"),
            "",
            [errors.Cause("FieldValueNotSupported", f'Unsupported value: {shown}: supported values: "{ALL}"', "dryRun")],
            "meta.k8s.io",
        )
    return True


def of_delete(verb: str, options: dict[str, Any], query_values: Sequence[str]) -> bool:
    """A DELETE's dry run: from its DeleteOptions body when it has one (kubectl sends `dryRun: [All]` there), else
    from the query."""
    body = options.get("dryRun")
    if body is not None and not isinstance(body, list):
        raise errors.bad_request("error decoding request body: dryRun must be a list of strings")
    return requested(verb, body if body is not None else query_values)
