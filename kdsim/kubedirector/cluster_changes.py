"""KubeDirector's rules for an update of a KDCluster's spec (pkg/validator/cluster.go admitClusterCR), pure.

`validateGeneralClusterChanges` refuses a changed `app` or `appCatalog` ("The %s property is read-only.") and
`validateRoleChanges` refuses, for a role with status (members exist or are going away), any property but
`members`, or a role with status but no spec (deleted, not gone yet); when any of those fire they replace every
other error. KD judges the request as sent, before its own mutations, against the stored object: a request
leaving out what KD filled in at create (appCatalog, a role's storageClassName or secret) changes it (seen on
the real KubeDirector: `The appCatalog property is read-only.`). The answer's message is KD's: "\n" + the errors
joined by "\n".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

General = Callable[[Mapping[str, Any], Mapping[str, Any]], list[str]]  # the branch's app rules (live_upgrade.py)

MODIFIED_PROPERTY = "The %s property is read-only."  # pkg/validator/types.go modifiedProperty
MODIFIED_ROLE = "Role(%s) properties other than the members count cannot be modified while role members exist."


def _role_view(role: Mapping[str, Any]) -> dict[str, Any]:
    """A role as KD compares it (compareRole.Members = prevRole.Members): members left out."""
    return {k: v for k, v in role.items() if k != "members"}


def change_errors(old: Mapping[str, Any], new: Mapping[str, Any], general: General | None = None) -> list[str]:
    """validateGeneralClusterChanges + validateRoleChanges for an update of ``old`` into ``new`` (objects); an
    unchanged spec gives none (KD's shortcut admits it before). ``general``: the live-app-upgrade branch's rules
    for `app` (kdsim/kubedirector/live_upgrade.py general_errors), instead of stock's read-only `app`."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    errors: list[str] = []
    if general is not None:
        errors += general(old, new)
    elif new_spec.get("app") != old_spec.get("app"):
        errors.append(MODIFIED_PROPERTY % "app")
    if new_spec.get("appCatalog") != old_spec.get("appCatalog"):  # a missing one too, when one is stored
        errors.append(MODIFIED_PROPERTY % "appCatalog")
    prev_roles = {str(r.get("id")): r for r in old_spec.get("roles") or ()}
    with_status = {str(r.get("id")) for r in (old.get("status") or {}).get("roles") or ()}
    for role in new_spec.get("roles") or ():
        rid = str(role.get("id"))
        if rid not in with_status:
            continue
        prev = prev_roles.get(rid)
        if prev is None or _role_view(role) != _role_view(prev):
            errors.append(MODIFIED_ROLE % rid)
    return errors


def denial(errors: list[str]) -> str:
    """The message KD's webhook answers with (its leading newline included)."""
    return "\n" + "\n".join(errors)
