"""Value objects of the desired state: KDApp (with roles and services) and KDCluster."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import semver

from gitops_kd.constants import UPGRADE_ANNOTATION
from gitops_kd.spec.freeze import FrozenMap, thaw

if TYPE_CHECKING:
    from gitops_kd.spec.upgrade import UpgradeSpec


@dataclass(frozen=True)
class ConfigPackage:
    """A role's app setup package (configPackage / defaultConfigPackage)."""

    package_url: str
    use_new_setup_layout: bool


@dataclass(frozen=True)
class Service:
    """One service of a KDApp (spec.services[])."""

    id: str
    port: int | None
    url_scheme: str | None
    is_dashboard: bool
    path: str | None = None
    label_name: str | None = None


@dataclass(frozen=True)
class Role:
    """One role of a KDApp (spec.roles[]), with KubeDirector's inherited defaults applied."""

    id: str
    cardinality: str
    min_members: int
    max_members: int | None
    image: str | None
    persist_dirs: tuple[str, ...] | None
    effective_persist_dirs: tuple[str, ...]
    service_ids: tuple[str, ...]
    min_resources: FrozenMap[str, Any]
    config_package: ConfigPackage | None = None
    selected: bool = True

    def allows_members(self, members: int) -> bool:
        """True if the member count satisfies the role's cardinality ("N" exactly, "N+" at least)."""
        if self.max_members is None:
            return members >= self.min_members
        return members == self.min_members


@dataclass(frozen=True)
class KDApp:
    """A KubeDirectorApp from Git, validated; ``body`` is the whole document as written.

    ``source`` is the repo-relative file, ``document`` the 1-based document number inside a
    multi-document file (None otherwise); ``role`` ids keep spec order.
    """

    name: str
    namespace: str | None
    version: str
    semver: semver.Version
    distro_id: str
    label_name: str
    default_image: str | None
    roles: tuple[Role, ...]
    services: tuple[Service, ...]
    default_persist_dirs: tuple[str, ...] | None
    upgrade: UpgradeSpec | None
    source: str
    frozen_body: FrozenMap[str, Any] = field(repr=False)
    document: int | None = None

    @property
    def body(self) -> dict[str, Any]:
        """A deep, mutable copy of the document as written (including spec.upgrade)."""
        return thaw(self.frozen_body)  # type: ignore[no-any-return]

    @property
    def key(self) -> tuple[str | None, str]:
        """(namespace, name)."""
        return (self.namespace, self.name)

    @property
    def role_ids(self) -> tuple[str, ...]:
        return tuple(r.id for r in self.roles)

    @property
    def persisted_dirs(self) -> tuple[str, ...]:
        """Every dir persisted by at least one role, first-seen order."""
        seen: dict[str, None] = {}
        for r in self.roles:
            for d in r.effective_persist_dirs:
                seen.setdefault(d, None)
        return tuple(seen)

    def role(self, role_id: str) -> Role:
        """The role with this id; KeyError naming the app and its roles if absent."""
        for r in self.roles:
            if r.id == role_id:
                return r
        raise KeyError(f'app "{self.name}" has no role "{role_id}" (roles: {", ".join(self.role_ids)})')

    def service(self, service_id: str) -> Service:
        for s in self.services:
            if s.id == service_id:
                return s
        raise KeyError(f'app "{self.name}" has no service "{service_id}"')

    def cluster_manifest(self) -> dict[str, Any]:
        """The object to apply: the body without spec.upgrade, the stanza kept as an annotation."""
        body = self.body
        body["spec"].pop("upgrade", None)
        if self.upgrade is not None:
            metadata = body.setdefault("metadata", {})
            annotations = metadata.get("annotations") or {}
            annotations[UPGRADE_ANNOTATION] = self.upgrade.to_annotation()
            metadata["annotations"] = annotations
        return body


@dataclass(frozen=True)
class ClusterRole:
    """One role of a KDCluster (spec.roles[]); ``members`` is None when the file leaves it out."""

    id: str
    members: int | None
    storage_size: str | None
    storage_class: str | None
    resources: FrozenMap[str, Any]

    def members_for(self, app_role: Role) -> int:
        """The member count KubeDirector will use: as written, else the cardinality minimum."""
        return self.members if self.members is not None else app_role.min_members


@dataclass(frozen=True)
class KDCluster:
    """A KubeDirectorCluster from Git, validated; ``body`` is the whole document as written.

    ``wave`` comes from the gitops-kd.io/wave label (default 0). Use ``with_app_defaults`` or
    ``ClusterRole.members_for`` for member counts the file leaves to KubeDirector's default.
    """

    name: str
    namespace: str | None
    app: str
    app_catalog: str | None
    roles: tuple[ClusterRole, ...]
    wave: int
    source: str
    frozen_body: FrozenMap[str, Any] = field(repr=False)
    document: int | None = None

    @property
    def body(self) -> dict[str, Any]:
        """A deep, mutable copy of the document as written."""
        return thaw(self.frozen_body)  # type: ignore[no-any-return]

    @property
    def key(self) -> tuple[str | None, str]:
        """(namespace, name)."""
        return (self.namespace, self.name)

    def role(self, role_id: str) -> ClusterRole:
        for r in self.roles:
            if r.id == role_id:
                return r
        raise KeyError(f'cluster "{self.name}" has no role "{role_id}"')

    def with_app_defaults(self, app: KDApp) -> KDCluster:
        """A copy whose roles without ``members`` get KubeDirector's default from the app."""
        roles = tuple(
            replace(r, members=r.members_for(app.role(r.id))) if r.members is None and r.id in app.role_ids else r
            for r in self.roles
        )
        return replace(self, roles=roles)


def compact_json(value: Any) -> str:
    """Canonical compact JSON (sorted keys, no spaces) for annotations."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
