"""Cross-file checks of a whole desired set: unique objects, clusters naming existing apps and roles."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gitops_kd.spec.errors import FieldError, join_path
from gitops_kd.spec.model import KDApp, KDCluster


def _ns(namespace: str | None, default_namespace: str | None) -> str | None:
    return namespace or default_namespace


def _where(namespace: str | None) -> str:
    return f'namespace "{namespace}"' if namespace else "the default namespace"


def find_app(
    cluster: KDCluster,
    apps: Sequence[KDApp],
    default_namespace: str | None = None,
    system_namespace: str | None = None,
) -> KDApp | None:
    """The app KubeDirector would use for the cluster (FindApp): spec.appCatalog "local" looks in
    the cluster's namespace, "system" in KubeDirector's (any namespace when ``system_namespace``
    is unknown), unset looks locally first, then as "system"."""
    ns = _ns(cluster.namespace, default_namespace)
    named = [a for a in apps if a.name == cluster.app]
    if cluster.app_catalog in (None, "local"):
        local = [a for a in named if _ns(a.namespace, default_namespace) == ns]
        if local or cluster.app_catalog == "local":
            return local[0] if local else None
    if system_namespace is not None:
        named = [a for a in named if _ns(a.namespace, default_namespace) == system_namespace]
    return named[0] if named else None


def check_desired_set(
    apps: Iterable[KDApp],
    clusters: Iterable[KDCluster],
    *,
    default_namespace: str | None = None,
    system_namespace: str | None = None,
) -> list[FieldError]:
    """Every cross-file problem: duplicate apps or clusters (by namespace and name), clusters whose
    spec.app names no app of the set, cluster roles the app does not have, member counts outside
    the role's cardinality, and active app roles with a non-zero minimum missing from a cluster."""
    app_list, cluster_list = list(apps), list(clusters)
    errors = _duplicates(app_list, "app", default_namespace) + _duplicates(cluster_list, "cluster", default_namespace)
    for cluster in cluster_list:
        app = find_app(cluster, app_list, default_namespace, system_namespace)
        if app is None:
            names = ", ".join(sorted({a.name for a in app_list})) or "none"
            errors.append(
                _err(
                    cluster,
                    "spec.app",
                    (
                        f'unknown app "{cluster.app}": no KubeDirectorApp of that name in '
                        f"{_where(_ns(cluster.namespace, default_namespace))} of this repository (apps: {names})"
                    ),
                )
            )
            continue
        errors.extend(_check_roles(cluster, app))
    return errors


def _err(obj: KDApp | KDCluster, field: str, reason: str) -> FieldError:
    return FieldError(obj.source, field, reason, obj.document)


def _duplicates(objs: Sequence[KDApp] | Sequence[KDCluster], what: str, default_ns: str | None) -> list[FieldError]:
    first: dict[tuple[str | None, str], KDApp | KDCluster] = {}
    errors: list[FieldError] = []
    for obj in objs:
        key = (_ns(obj.namespace, default_ns), obj.name)
        if key in first:
            other = first[key]
            where = other.source + (f" (document {other.document})" if other.document else "")
            errors.append(_err(obj, "metadata.name", f'duplicate {what} "{obj.name}" in {_where(key[0])} (also in {where})'))
        else:
            first[key] = obj
    return errors


def _check_roles(cluster: KDCluster, app: KDApp) -> list[FieldError]:
    errors: list[FieldError] = []
    listed = set()
    for i, role in enumerate(cluster.roles):
        path = join_path("spec.roles", i)
        listed.add(role.id)
        if role.id not in app.role_ids:
            errors.append(
                _err(
                    cluster,
                    join_path(path, "id"),
                    f'unknown role "{role.id}" for app "{app.name}" (roles: {", ".join(app.role_ids)})',
                )
            )
            continue
        app_role = app.role(role.id)
        if role.members is not None and not app_role.allows_members(role.members):
            errors.append(
                _err(
                    cluster,
                    join_path(path, "members"),
                    (
                        f'{role.members} members does not match cardinality "{app_role.cardinality}" '
                        f'of role "{role.id}" in app "{app.name}"'
                    ),
                )
            )
    for app_role in app.roles:
        if app_role.selected and app_role.min_members > 0 and app_role.id not in listed:
            errors.append(
                _err(
                    cluster,
                    "spec.roles",
                    (
                        f'role "{app_role.id}" of app "{app.name}" is active with cardinality '
                        f'"{app_role.cardinality}" and must be listed'
                    ),
                )
            )
    return errors
