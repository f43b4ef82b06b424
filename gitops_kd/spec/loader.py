"""load_manifests: one file's bytes -> validated KDApp/KDCluster objects, or SpecError with every problem."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from gitops_kd.spec.app_builder import build_app
from gitops_kd.spec.cluster_builder import build_cluster
from gitops_kd.spec.documents import Document, split_documents
from gitops_kd.spec.errors import FieldError, SpecError
from gitops_kd.spec.kinds import API_VERSION, KDAPP_KIND, KDCLUSTER_KIND
from gitops_kd.spec.model import KDApp, KDCluster
from gitops_kd.spec.positions import locate
from gitops_kd.spec.reader import Reader, type_name
from gitops_kd.spec.structural import structural_errors

log = logging.getLogger(__name__)
KINDS = (KDAPP_KIND, KDCLUSTER_KIND)


def load_manifests(path: str, data: bytes) -> list[KDApp | KDCluster]:
    """Parse and validate every document of one file (YAML, multi-document YAML or JSON).

    ``path`` is the repo-relative path used in errors. Empty documents are skipped.
    Raises SpecError listing all problems of the file; never returns a partial list.
    """
    documents, errors = split_documents(path, data)
    objects: list[KDApp | KDCluster] = []
    all_errors = list(errors)
    for doc in documents:
        obj, doc_errors = _load_document(path, doc)
        all_errors.extend(doc_errors)
        if obj is not None:
            objects.append(obj)
    if all_errors:
        raise SpecError(locate(all_errors, lambda _file: data))
    log.debug("%s: loaded %d object(s)", path, len(objects))
    return objects


def _load_document(path: str, doc: Document) -> tuple[KDApp | KDCluster | None, list[FieldError]]:
    reader = Reader(path, doc.number)
    data = doc.data
    if not isinstance(data, Mapping):
        reader.error("", f"a document must be a map (a Kubernetes object), not {type_name(data)}")
        return None, reader.errors
    kind = data.get("kind")
    if kind not in KINDS:
        shown = f'"{kind}"' if isinstance(kind, str) else "missing" if kind is None else type_name(kind)
        reader.error("kind", f"unsupported kind {shown}: only {KDAPP_KIND} and {KDCLUSTER_KIND} may be declared here")
        return None, reader.errors
    if data.get("apiVersion") != API_VERSION:
        reader.error("apiVersion", f'must be "{API_VERSION}", not "{data.get("apiVersion")}"')
    structural = [FieldError(path, f, r, doc.number) for f, r in structural_errors(kind, data)]
    obj: KDApp | KDCluster | None = build_app(reader, data) if kind == KDAPP_KIND else build_cluster(reader, data)
    covered = {e.field for e in structural}
    semantic = [e for e in reader.errors if e.field not in covered]
    found = structural + semantic
    return (obj if not found else None), found
