"""Input limits, one rule where manifest files are loaded: what the loader accepts the whole pipeline can process.

The limits stay well inside what a Kubernetes API server accepts, so no commit gitops-kd takes is one the
cluster would refuse, and no accepted object is deep or large enough to break a recursive step later
(diff, render, drift: Python stops at ~1000 frames):

- kube-apiserver refuses a write request body over 3 MiB (``MaxRequestBodyBytes = 3 * 1024 * 1024`` in
  k8s.io/apiserver/pkg/server/config.go; "Request entity too large: limit is 3145728",
  kubernetes/kubernetes#105863, #73805), and etcd stores at most ~1.5 MiB per object
  (kubernetes/kubernetes#107233). A manifest file is therefore at most MAX_FILE_BYTES = 1 MiB.
- The API server's JSON decoding stops at a nesting depth of 10000 (Go encoding/json's
  ``maxNestingDepth``, the bound liggitt added to json-iterator for Kubernetes, json-iterator/go#410); a
  KubeDirectorApp or KubeDirectorCluster schema is under 15 levels deep, so MAX_DEPTH = 100 leaves room
  for any real object while keeping every recursive walk far from Python's recursion limit.
- Strings: at most MAX_STRING_BYTES = 256 KiB, the API server's limit on all annotations of one object
  together (``TotalAnnotationSizeLimitB`` in k8s.io/apimachinery/pkg/api/validation/objectmeta.go), the
  largest free-form text Kubernetes keeps in metadata.
- Documents: at most MAX_DOCUMENTS in one file (a file declares a few apps or clusters).
- A document once its YAML aliases are expanded (what the controller would build, serialize and send) is at
  most MAX_REQUEST_BODY_BYTES = 3 MiB, the API server's request body limit above: a small file whose aliases
  repeat a large string thousands of times is refused before it is built in memory.
- metadata.annotations: keys and values together at most MAX_ANNOTATIONS_BYTES = 256 KiB, as the API
  server's ValidateAnnotationsSize (``metadata.annotations: Too long: must have at most 262144 bytes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitops_kd.spec.errors import FieldError, join_path

MAX_FILE_BYTES: int = 1024 * 1024
MAX_DEPTH: int = 100
MAX_STRING_BYTES: int = 256 * 1024
MAX_DOCUMENTS: int = 100
MAX_REQUEST_BODY_BYTES: int = 3 * 1024 * 1024
MAX_ANNOTATIONS_BYTES: int = 256 * 1024
SHOWN_FIELD_CHARS = 120  # a too-deep field path is shown up to here (Event messages are short)


def file_size_error(path: str, size: int) -> FieldError | None:
    """The refusal of a file of `size` bytes, or None when it is within MAX_FILE_BYTES."""
    if size <= MAX_FILE_BYTES:
        return None
    return FieldError(path, "", f"file is {size} bytes, larger than the {MAX_FILE_BYTES} byte (1 MiB) limit")


def document_count_error(path: str, count: int) -> FieldError | None:
    """The refusal of a file with `count` non-empty documents, or None when it is within MAX_DOCUMENTS."""
    if count <= MAX_DOCUMENTS:
        return None
    return FieldError(path, "", f"file holds {count} documents, over the limit of {MAX_DOCUMENTS}")


def expanded_size_error(
    path: str, size: int, document: int | None = None, line: int | None = None, column: int | None = None
) -> FieldError | None:
    """The refusal of a document whose scalars total `size` bytes once aliases are expanded, or None."""
    if size <= MAX_REQUEST_BODY_BYTES:
        return None
    return FieldError(
        path,
        "",
        f"document is {size} bytes once its YAML aliases are expanded, over the API "
        f"server's {MAX_REQUEST_BODY_BYTES} byte (3 MiB) request limit; refused",
        document,
        line,
        column,
    )


def annotations_error(path: str, data: Any, document: int | None = None) -> FieldError | None:
    """The refusal of metadata.annotations over MAX_ANNOTATIONS_BYTES (keys and values), worded as the API
    server's; a value shared by several keys (a YAML alias) is counted each time, as the server would."""
    annotations = (data.get("metadata") or {}).get("annotations") if isinstance(data, Mapping) else None
    if not isinstance(annotations, Mapping):
        return None
    sizes: dict[int, int] = {}
    total = 0
    for key, value in annotations.items():
        for text in (key, value):
            if isinstance(text, str):
                if id(text) not in sizes:
                    sizes[id(text)] = len(text.encode("utf-8", "surrogatepass"))
                total += sizes[id(text)]
    if total <= MAX_ANNOTATIONS_BYTES:
        return None
    return FieldError(
        path, "metadata.annotations", f"Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes (these are {total})", document
    )


def value_errors(path: str, data: Any, document: int | None = None) -> list[FieldError]:
    """Refusals for one parsed document: annotations over MAX_ANNOTATIONS_BYTES, the first field nested deeper
    than MAX_DEPTH and every string (key or value) longer than MAX_STRING_BYTES, each named by its field path.
    Iterative, so a document of any depth is checked without recursion."""
    too_long = annotations_error(path, data, document)
    errors: list[FieldError] = [too_long] if too_long is not None else []
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    deep_reported = False
    while stack:
        value, field, depth = stack.pop()
        if isinstance(value, str):
            if len(value.encode("utf-8", "surrogatepass")) > MAX_STRING_BYTES:
                errors.append(FieldError(path, field, f"string is longer than {MAX_STRING_BYTES} bytes", document))
            continue
        children: list[tuple[Any, str]] = []
        if isinstance(value, Mapping):
            for key, child in value.items():
                if isinstance(key, str) and len(key.encode("utf-8", "surrogatepass")) > MAX_STRING_BYTES:
                    errors.append(FieldError(path, field, f"a key is longer than {MAX_STRING_BYTES} bytes", document))
                    continue
                children.append((child, join_path(field, str(key))))
        elif isinstance(value, (list, tuple)):
            children = [(child, join_path(field, i)) for i, child in enumerate(value)]
        if not children:
            continue
        if depth >= MAX_DEPTH:
            if not deep_reported:
                errors.append(FieldError(path, _shortened(field), f"nested more than {MAX_DEPTH} levels deep", document))
                deep_reported = True
            continue
        stack.extend((child, child_field, depth + 1) for child, child_field in reversed(children))
    return errors


def _shortened(field: str) -> str:
    return field if len(field) <= SHOWN_FIELD_CHARS else field[:SHOWN_FIELD_CHARS] + "..."
