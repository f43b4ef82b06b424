"""Server-side printing: meta.k8s.io/v1 Table responses with kubectl's columns for the common kinds."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kdsim.apiserver.meta import age
from kdsim.apiserver.resources import ResourceType

Row = Callable[[dict[str, Any]], list[Any]]
_DESC = "Name must be unique within a namespace."


def _col(name: str, type_: str = "string", priority: int = 0, fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": name, "priority": priority}


def _m(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("metadata") or {}


def _age(o: dict[str, Any]) -> str:
    return age(_m(o).get("creationTimestamp"))


def _pod_status(p: dict[str, Any]) -> str:
    st = p.get("status") or {}
    reason = st.get("reason") or st.get("phase") or "Unknown"
    inits = st.get("initContainerStatuses") or []
    for i, c in enumerate(inits):
        state = c.get("state") or {}
        if "terminated" in state and state["terminated"].get("exitCode", 0) == 0:
            continue
        if "waiting" in state and state["waiting"].get("reason") not in (None, "", "PodInitializing"):
            reason = "Init:" + state["waiting"]["reason"]
        else:
            reason = f"Init:{i}/{len((p.get('spec') or {}).get('initContainers') or inits)}"
        break
    else:
        for c in reversed(st.get("containerStatuses") or []):
            state = c.get("state") or {}
            if state.get("waiting", {}).get("reason"):
                reason = state["waiting"]["reason"]
            elif state.get("terminated", {}).get("reason"):
                reason = state["terminated"]["reason"]
    if _m(p).get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _pod(p: dict[str, Any]) -> list[Any]:
    st = p.get("status") or {}
    cs = st.get("containerStatuses") or []
    total = len((p.get("spec") or {}).get("containers") or []) or len(cs)
    ready = sum(1 for c in cs if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in cs)
    return [
        _m(p).get("name"),
        f"{ready}/{total}",
        _pod_status(p),
        restarts,
        _age(p),
        st.get("podIP") or "<none>",
        (p.get("spec") or {}).get("nodeName") or "<none>",
        "<none>",
        "<none>",
    ]


def _containers(template_spec: dict[str, Any]) -> tuple[str, str]:
    cs = template_spec.get("containers") or []
    return ",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs)


def _sts(s: dict[str, Any]) -> list[Any]:
    spec, st = s.get("spec") or {}, s.get("status") or {}
    names, images = _containers(((spec.get("template") or {}).get("spec")) or {})
    return [_m(s).get("name"), f"{st.get('readyReplicas', 0)}/{spec.get('replicas', 1)}", _age(s), names, images]


def _svc(s: dict[str, Any]) -> list[Any]:
    spec = s.get("spec") or {}
    ports = (
        ",".join(
            f"{p.get('port')}{':' + str(p['nodePort']) if p.get('nodePort') else ''}/{p.get('protocol', 'TCP')}"
            for p in spec.get("ports") or []
        )
        or "<none>"
    )
    sel = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items())) or "<none>"
    return [
        _m(s).get("name"),
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or "<none>",
        _external_ip(s),
        ports,
        _age(s),
        sel,
    ]


def _external_ip(s: dict[str, Any]) -> str:
    """kubectl's EXTERNAL-IP column (printers.go getServiceExternalIP)."""
    spec = s.get("spec") or {}
    kind, external = spec.get("type", "ClusterIP"), list(spec.get("externalIPs") or [])
    if kind == "ExternalName":
        return str(spec.get("externalName") or "<none>")
    if kind == "LoadBalancer":
        ingress = ((s.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        lb = [i.get("ip") or i.get("hostname") for i in ingress if i.get("ip") or i.get("hostname")]
        return ",".join(external + lb) if lb else "<pending>"
    return ",".join(external) or "<none>"


def _pvc(p: dict[str, Any]) -> list[Any]:
    spec, st = p.get("spec") or {}, p.get("status") or {}
    modes = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
    return [
        _m(p).get("name"),
        st.get("phase", "Pending"),
        spec.get("volumeName", ""),
        (st.get("capacity") or {}).get("storage", ""),
        ",".join(modes.get(m, m) for m in st.get("accessModes") or []),
        spec.get("storageClassName") or "<unset>",
        "<unset>",
        _age(p),
        spec.get("volumeMode", "Filesystem"),
    ]


def _event(e: dict[str, Any]) -> list[Any]:
    inv = e.get("involvedObject") or e.get("regarding") or {}
    last = e.get("lastTimestamp") or e.get("eventTime") or _m(e).get("creationTimestamp")
    return [
        age(last),
        e.get("type", ""),
        e.get("reason", ""),
        f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}",
        e.get("message") or e.get("note", ""),
    ]


_PRINTERS: dict[tuple[str, str], tuple[list[dict[str, Any]], Row]] = {
    ("", "pods"): (
        [
            _col("Name", fmt="name"),
            _col("Ready"),
            _col("Status"),
            _col("Restarts", "string"),
            _col("Age"),
            _col("IP", priority=1),
            _col("Node", priority=1),
            _col("Nominated Node", priority=1),
            _col("Readiness Gates", priority=1),
        ],
        _pod,
    ),
    ("apps", "statefulsets"): (
        [_col("Name", fmt="name"), _col("Ready"), _col("Age"), _col("Containers", priority=1), _col("Images", priority=1)],
        _sts,
    ),
    ("", "services"): (
        [
            _col("Name", fmt="name"),
            _col("Type"),
            _col("Cluster-IP"),
            _col("External-IP"),
            _col("Port(s)"),
            _col("Age"),
            _col("Selector", priority=1),
        ],
        _svc,
    ),
    ("", "configmaps"): (
        [_col("Name", fmt="name"), _col("Data", "integer"), _col("Age")],
        lambda o: [_m(o).get("name"), len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o)],
    ),
    ("", "secrets"): (
        [_col("Name", fmt="name"), _col("Type"), _col("Data", "integer"), _col("Age")],
        lambda o: [_m(o).get("name"), o.get("type", "Opaque"), len(o.get("data") or {}), _age(o)],
    ),
    ("", "namespaces"): (
        [_col("Name", fmt="name"), _col("Status"), _col("Age")],
        lambda o: [_m(o).get("name"), (o.get("status") or {}).get("phase", "Active"), _age(o)],
    ),
    ("", "persistentvolumeclaims"): (
        [
            _col("Name", fmt="name"),
            _col("Status"),
            _col("Volume"),
            _col("Capacity"),
            _col("Access Modes"),
            _col("StorageClass"),
            _col("VolumeAttributesClass"),
            _col("Age"),
            _col("VolumeMode", priority=1),
        ],
        _pvc,
    ),
    ("", "events"): ([_col("Last Seen"), _col("Type"), _col("Reason"), _col("Object"), _col("Message")], _event),
    ("", "serviceaccounts"): (
        [_col("Name", fmt="name"), _col("Secrets", "integer"), _col("Age")],
        lambda o: [_m(o).get("name"), len(o.get("secrets") or []), _age(o)],
    ),
    ("coordination.k8s.io", "leases"): (
        [_col("Name", fmt="name"), _col("Holder"), _col("Age")],
        lambda o: [_m(o).get("name"), (o.get("spec") or {}).get("holderIdentity", ""), _age(o)],
    ),
    ("apps", "controllerrevisions"): (
        [_col("Name", fmt="name"), _col("Controller"), _col("Revision", "integer"), _col("Age")],
        lambda o: [
            _m(o).get("name"),
            next(
                (
                    f"{r.get('kind', '').lower()}.{r.get('apiVersion', '').split('/')[0]}/{r.get('name')}"
                    for r in _m(o).get("ownerReferences") or []
                ),
                "<none>",
            ),
            o.get("revision", 0),
            _age(o),
        ],
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        [_col("Name", fmt="name"), _col("Created At", "date")],
        lambda o: [_m(o).get("name"), _m(o).get("creationTimestamp", "")],
    ),
}

_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']+)'\]|\[\?\(@\.([\w.-]+)\s*==\s*[\"']([^\"']*)[\"']\)\]")


def json_path(obj: Any, path: str) -> Any:
    """Evaluate a CRD printer-column JSONPath such as `.status.members[0].state` or
    `.status.conditions[?(@.type=="Ready")].status` (a filter keeps the first matching list item)."""
    path = path.strip().strip("{}")
    cur = obj
    for m in _TOKEN.finditer(path):
        key, index, quoted, fkey, fvalue = m.groups()
        if fkey is not None:
            matches = [i for i in cur if isinstance(i, dict) and str(i.get(fkey)) == fvalue] if isinstance(cur, list) else []
            cur = matches[0] if matches else None
        elif index is not None:
            cur = cur[int(index)] if isinstance(cur, list) and int(index) < len(cur) else None
        else:
            cur = cur.get(key if key is not None else quoted) if isinstance(cur, dict) else None
        if cur is None:
            return None
    return cur


def _custom(rt: ResourceType) -> tuple[list[dict[str, Any]], Row]:
    if not rt.printer_columns:
        return [_col("Name", fmt="name"), _col("Age", "date")], lambda o: [_m(o).get("name"), _age(o)]
    cols = [_col("Name", fmt="name")] + [
        {"name": c.name, "type": c.type, "format": c.format, "description": c.description, "priority": c.priority}
        for c in rt.printer_columns
    ]

    def row(o: dict[str, Any]) -> list[Any]:
        cells: list[Any] = [_m(o).get("name")]
        for c in rt.printer_columns:
            v = json_path(o, c.json_path)
            cells.append(age(v) if c.type == "date" and isinstance(v, str) else v)
        return cells

    return cols, row


def printer(rt: ResourceType) -> tuple[list[dict[str, Any]], Row]:
    if rt.custom:
        return _custom(rt)
    return _PRINTERS.get((rt.group, rt.plural), ([_col("Name", fmt="name"), _col("Age")], lambda o: [_m(o).get("name"), _age(o)]))


def _row_object(obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def to_table(
    rt: ResourceType,
    objects: list[dict[str, Any]],
    *,
    include_object: str = "Metadata",
    list_meta: dict[str, Any] | None = None,
    with_columns: bool = True,
) -> dict[str, Any]:
    """A Table of `objects` (kubectl's `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`)."""
    cols, row = printer(rt)
    rows = []
    for obj in objects:
        r: dict[str, Any] = {"cells": row(obj)}
        ro = _row_object(obj, include_object)
        if ro is not None:
            r["object"] = ro
        rows.append(r)
    table: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": cols if with_columns else [],
        "rows": rows,
    }
    return table
