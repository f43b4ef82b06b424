"""KDApps stock KubeDirector holds: in use by clusters, so their spec stays as KubeDirector admitted it (pure).

KubeDirector's app webhook (pkg/validator/app.go) refuses a spec change of a KDApp any KDCluster references;
labels and annotations may change. gitops-kd then upgrades at the StatefulSet level and does not write the
KDApp: Git's version is recorded in the KDRollouts and the pod templates, and the KDApp is applied once no
cluster uses it (docs/design/stock-kubedirector.md). A held KDApp is neither drift nor a pending write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gitops_kd.constants import APPLIED_ANNOTATION
from gitops_kd.diff.engine import annotation, desired_app_facts, frozen_app_manifest
from gitops_kd.diff.fields import app_fact_changes, app_role_facts, contains
from gitops_kd.diff.model import Refusal
from gitops_kd.observed import ObservedApp, ObservedCluster
from gitops_kd.spec.model import KDApp
from gitops_kd.spec.state import Key


@dataclass(frozen=True)
class Held:
    """A KDApp whose spec KubeDirector keeps at ``live_version`` while ``users`` use it; Git asks ``version``."""

    key: Key
    live_version: str
    version: str
    users: tuple[Key, ...]

    @property
    def note(self) -> str:
        """What status says of it (the KDRollout's Ready message, `gitops-kd plan` / `status` notes)."""
        return (
            f"KDApp {self.key[1]} held at {self.live_version} by KubeDirector while in use; clusters run "
            f"{self.version} at the StatefulSet level"
        )

    def describe(self) -> str:
        users = ", ".join(f"{ns}/{name}" for ns, name in self.users)
        return (
            f"KubeDirectorApp {self.key[0]}/{self.key[1]} not applied: {self.note} (used by {users}; applied "
            f"once no cluster uses it)"
        )


def spec_changed(app: KDApp, key: Key, live: ObservedApp) -> bool:
    """True when Git's spec of the app is not the one the live KDApp was applied from (the applied-spec digest);
    for a KDApp gitops-kd did not apply, when the versions differ or the live spec lacks part of Git's (a write
    KubeDirector would refuse while clusters use it is never tried: it would only stall)."""
    manifest = frozen_app_manifest(app, key)
    digest = annotation(live.raw, APPLIED_ANNOTATION)
    if digest is not None:
        return bool(digest != annotation(manifest, APPLIED_ANNOTATION))
    return live.version != app.version or not contains(live.spec, manifest.get("spec") or {})


def held(app: KDApp, key: Key, live: ObservedApp | None, users: Iterable[ObservedCluster], needs_apply: bool) -> Held | None:
    """The hold of a KDApp whose apply would change its spec while clusters use it, or None (apply it)."""
    using = tuple(sorted(c.key for c in users))
    if live is None or not using or not needs_apply or not spec_changed(app, key, live):
        return None
    return Held(key, live.version, app.version, using)


def _config_packages(spec: Any) -> dict[str, Any]:
    """role id -> its config package URL (the role's, else the app default; None without one)."""
    default = spec.get("defaultConfigPackage")
    out: dict[str, Any] = {}
    for role in spec.get("roles") or ():
        package = role.get("configPackage", default) if "configPackage" in role else default
        out[str(role.get("id"))] = (package or {}).get("packageURL") if isinstance(package, Mapping) else None
    return out


def held_refusals(app: KDApp, hold: Held, live: ObservedApp) -> list[Refusal]:
    """What stock KubeDirector cannot do at the StatefulSet level while it holds the KDApp: it validates and renders
    the clusters' roles from the held spec (roles, cardinality) and runs its setup (config package)."""
    why = (
        f"KubeDirector holds KDApp {hold.key[1]} at {hold.live_version} while "
        f"{', '.join(f'{ns}/{n}' for ns, n in hold.users)} use it, and validates and renders the clusters' roles "
        f"from it"
    )
    out: list[Refusal] = []
    for change in app_fact_changes(app_role_facts(live.spec), desired_app_facts(app)):
        if change.field == "role" and change.old is None:  # a removed role is refused while it has members (diff)
            out.append(
                Refusal(
                    app.source,
                    f"spec.roles[{change.role}]",
                    (f"role {change.role} added: {why}; add roles with a new KDApp once no cluster uses this one"),
                )
            )
        elif change.field == "cardinality":
            out.append(
                Refusal(
                    app.source, f"spec.roles[{change.role}].cardinality", (f"cardinality {change.old!r} -> {change.new!r}: {why}")
                )
            )
    live_packages, packages = _config_packages(live.spec), _config_packages(app.frozen_body.get("spec") or {})
    for rid in sorted(set(live_packages) & set(packages)):
        if live_packages[rid] != packages[rid]:
            out.append(
                Refusal(
                    app.source,
                    f"spec.roles[{rid}].configPackage",
                    (
                        f"config package {live_packages[rid]!r} -> {packages[rid]!r}: KubeDirector runs the setup of the KDApp "
                        f"it holds at {hold.live_version} while clusters use it; the new package would never run"
                    ),
                )
            )
    return out


__all__ = ["Held", "held", "held_refusals", "spec_changed"]
