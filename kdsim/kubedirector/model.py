"""Typed views of a KubeDirectorApp and a KubeDirectorCluster with KubeDirector's defaults applied (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kdsim.kubedirector import names


class SpecError(ValueError):
    """A KDApp/KDCluster that KubeDirector would refuse; the message names the object, field and reason."""


@dataclass(frozen=True)
class ServicePort:
    """One app service endpoint exposed by a role (KD's catalog.ServicePortInfo)."""

    id: str
    port: int
    url_scheme: str = ""


@dataclass(frozen=True)
class SetupPackage:
    """A role's app config package (configPackage / defaultConfigPackage)."""

    package_url: str
    use_new_setup_layout: bool


@dataclass(frozen=True)
class AppRole:
    """A KDApp role with the app-level defaults (image, persistDirs, configPackage) folded in."""

    id: str
    min_members: int
    scale_out: bool
    image: str | None
    persist_dirs: tuple[str, ...] | None
    setup_package: SetupPackage | None
    ports: tuple[ServicePort, ...]
    stdin: bool = False
    tty: bool = False


@dataclass(frozen=True)
class App:
    """A KubeDirectorApp as the cluster controller needs it."""

    name: str
    namespace: str
    pretty_name: str
    systemd_required: bool
    capabilities: tuple[str, ...]
    roles: tuple[AppRole, ...]

    def role(self, role_id: str) -> AppRole | None:
        return next((r for r in self.roles if r.id == role_id), None)


@dataclass(frozen=True)
class Storage:
    """A cluster role's persistent storage request."""

    size: str
    storage_class: str | None = None


@dataclass(frozen=True)
class ClusterRole:
    """A KDCluster role with members defaulted from the app's cardinality."""

    id: str
    members: int
    resources: Mapping[str, Any] = field(default_factory=dict)
    storage: Storage | None = None
    env: tuple[Mapping[str, Any], ...] = ()
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    pod_annotations: Mapping[str, str] = field(default_factory=dict)
    service_labels: Mapping[str, str] = field(default_factory=dict)
    service_annotations: Mapping[str, str] = field(default_factory=dict)
    secret: Mapping[str, Any] | None = None
    shared_memory: str | None = None
    service_account: str = ""
    affinity: Mapping[str, Any] | None = None
    volume_projections: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class Cluster:
    """A KubeDirectorCluster with the defaults KD's admission webhook would have written into it."""

    name: str
    namespace: str
    uid: str
    app_id: str
    app_catalog: str
    service_type: str
    naming_scheme: str
    roles: tuple[ClusterRole, ...]
    connection_secrets: tuple[str, ...] = ()

    def role(self, role_id: str) -> ClusterRole | None:
        return next((r for r in self.roles if r.id == role_id), None)


def _what(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{obj.get('kind', 'object')} {ns + '/' if ns else ''}{meta.get('name', '?')}"


def _parse_cardinality(text: str, where: str) -> tuple[int, bool]:
    scale_out = text.endswith("+")
    digits = text[:-1] if scale_out else text
    if not digits.isdigit():
        raise SpecError(f"{where}: cardinality {text!r} is not N or N+")
    return int(digits), scale_out


def _setup_package(raw: Any) -> SetupPackage | None:
    if not isinstance(raw, Mapping):
        return None
    return SetupPackage(str(raw.get("packageURL", "")), bool(raw.get("useNewSetupLayout", False)))


def parse_app(obj: Mapping[str, Any]) -> App:
    """Read a KubeDirectorApp dict; per-role fields fall back to the app defaults as KD's webhook does."""
    what = _what(obj)
    spec = obj.get("spec") or {}
    services = {s.get("id"): s for s in spec.get("services") or []}
    role_services = {rs.get("roleID"): rs.get("serviceIDs") or [] for rs in (spec.get("config") or {}).get("roleServices") or []}
    default_pkg_set = "defaultConfigPackage" in spec
    default_pkg = _setup_package(spec.get("defaultConfigPackage"))
    roles: list[AppRole] = []
    for i, raw in enumerate(spec.get("roles") or []):
        where = f"{what}: spec.roles[{i}]"
        role_id = raw.get("id")
        if not role_id:
            raise SpecError(f"{where}.id: required")
        min_members, scale_out = _parse_cardinality(str(raw.get("cardinality", "")), f"{where}.cardinality")
        ports = []
        for sid in role_services.get(role_id, []):
            endpoint = (services.get(sid) or {}).get("endpoint") or {}
            if sid in services and endpoint.get("port") is not None:
                ports.append(ServicePort(sid, int(endpoint["port"]), str(endpoint.get("urlScheme") or "")))
        # Order of ports follows the app's services list, as KD's PortsForRole iterates spec.services.
        order = list(services)
        ports.sort(key=lambda p: order.index(p.id))
        persist = raw.get("persistDirs", spec.get("defaultPersistDirs"))
        pkg = _setup_package(raw["configPackage"]) if "configPackage" in raw else (default_pkg if default_pkg_set else None)
        container = raw.get("containerSpec") or {}
        roles.append(
            AppRole(
                id=role_id,
                min_members=min_members,
                scale_out=scale_out,
                image=raw.get("imageRepoTag") or spec.get("defaultImageRepoTag"),
                persist_dirs=tuple(persist) if persist is not None else None,
                setup_package=pkg,
                ports=tuple(ports),
                stdin=bool(container.get("stdin")),
                tty=bool(container.get("tty")),
            )
        )
    meta = obj.get("metadata") or {}
    return App(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        pretty_name=str((spec.get("label") or {}).get("name", "")),
        systemd_required=bool(spec.get("systemdRequired")),
        capabilities=tuple(spec.get("capabilities") or ()),
        roles=tuple(roles),
    )


def parse_cluster(obj: Mapping[str, Any], app: App) -> Cluster:
    """Read a KubeDirectorCluster dict against its app; raises SpecError where KD's webhook would refuse."""
    what = _what(obj)
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    roles: list[ClusterRole] = []
    seen: set[str] = set()
    for i, raw in enumerate(spec.get("roles") or []):
        where = f"{what}: spec.roles[{i}]"
        role_id = raw.get("id")
        app_role = app.role(role_id)
        if app_role is None:
            raise SpecError(f"{where}.id: role {role_id!r} is not defined by KubeDirectorApp {app.name!r}")
        if role_id in seen:
            raise SpecError(f"{where}.id: duplicate role {role_id!r}")
        seen.add(role_id)
        members = raw.get("members")
        if members is None:
            members = app_role.min_members
        elif members < app_role.min_members or (not app_role.scale_out and members != app_role.min_members):
            card = f"{app_role.min_members}{'+' if app_role.scale_out else ''}"
            raise SpecError(f"{where}.members: {members} does not satisfy the app's cardinality {card}")
        storage = raw.get("storage")
        roles.append(
            ClusterRole(
                id=role_id,
                members=int(members),
                resources=raw.get("resources") or {},
                storage=Storage(str(storage["size"]), storage.get("storageClassName")) if storage else None,
                env=tuple(raw.get("env") or ()),
                pod_labels=raw.get("podLabels") or {},
                pod_annotations=raw.get("podAnnotations") or {},
                service_labels=raw.get("serviceLabels") or {},
                service_annotations=raw.get("serviceAnnotations") or {},
                secret=raw.get("secret") or spec.get("defaultSecret"),
                shared_memory=raw.get("sharedMemory"),
                service_account=raw.get("serviceAccountName") or "",
                affinity=raw.get("affinity"),
                volume_projections=tuple(raw.get("volumeProjections") or ()),
            )
        )
    namespace = str(meta.get("namespace", ""))
    catalog = spec.get("appCatalog") or (names.CATALOG_LOCAL if app.namespace == namespace else names.CATALOG_SYSTEM)
    return Cluster(
        name=str(meta.get("name", "")),
        namespace=namespace,
        uid=str(meta.get("uid", "")),
        app_id=str(spec.get("app", "")),
        app_catalog=catalog,
        service_type=spec.get("serviceType") or names.DEFAULT_SERVICE_TYPE,
        naming_scheme=spec.get("namingScheme") or names.DEFAULT_NAMING_SCHEME,
        roles=tuple(roles),
        connection_secrets=tuple((spec.get("connections") or {}).get("secrets") or ()),
    )
