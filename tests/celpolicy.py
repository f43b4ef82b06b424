"""deploy/optional/admission-policy's ValidatingAdmissionPolicies rendered, and their CEL evaluated (cel-python) as
the API server decides: the fast check, held to a real kube-apiserver's answers by tests/real/test_admission_policy.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import celpy
import yaml

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = {
    "StatefulSet": "statefulsets",
    "Service": "services",
    "KubeDirectorApp": "kubedirectorapps",
    "KubeDirectorCluster": "kubedirectorclusters",
}
SKIPPED, ALLOWED = "skipped", "allowed"  # verdicts; any other verdict is the denial message


def overlay(tmp: Path, component: str) -> Path:
    """A kustomization in ``tmp`` of deploy/ with its optional ``component`` (admission, admission-policy)."""
    path = tmp / component
    path.mkdir(parents=True)
    rel = os.path.relpath(ROOT / "deploy", path)
    (path / "kustomization.yaml").write_text(f"resources: [{rel}]\ncomponents: [{rel}/optional/{component}]\n")
    return path


def render(path: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize path`'s documents."""
    out = subprocess.run(["kubectl", "kustomize", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def policy_documents(tmp: Path) -> list[dict[str, Any]]:
    """The component's ValidatingAdmissionPolicies and their bindings, as rendered with deploy/."""
    kinds = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
    return [d for d in render(overlay(tmp, "admission-policy")) if d["kind"] in kinds]


def policies(tmp: Path) -> dict[str, dict[str, Any]]:
    """Each ValidatingAdmissionPolicy's spec by name."""
    return {d["metadata"]["name"]: d["spec"] for d in policy_documents(tmp) if d["kind"] == "ValidatingAdmissionPolicy"}


def _matched(policy: dict[str, Any], request: dict[str, Any], obj: Any, old: Any) -> bool:
    """matchConstraints as the API server applies them: a resourceRule naming the resource and the operation, and
    the objectSelector's Exists expressions on the object or the old object (either matching is enough)."""
    constraints = policy["matchConstraints"]
    if not any(
        RESOURCES[request["kind"]["kind"]] in r["resources"] and request["operation"] in r["operations"]
        for r in constraints["resourceRules"]
    ):
        return False
    wanted = [
        e["key"] for e in (constraints.get("objectSelector") or {}).get("matchExpressions") or [] if e["operator"] == "Exists"
    ]
    return not wanted or any(all(k in ((o or {}).get("metadata") or {}).get("labels", {}) for k in wanted) for o in (obj, old))


def verdict(policy: dict[str, Any], request: dict[str, Any], obj: Any, old: Any) -> str:
    """SKIPPED (not matched, or a matchCondition is false), ALLOWED, or the denial message, as the API server
    decides."""
    if not _matched(policy, request, obj, old):
        return SKIPPED
    env = celpy.Environment()
    activation = celpy.json_to_cel({"request": request, "object": obj, "oldObject": old})

    def run(expr: str) -> Any:
        return env.program(env.compile(expr)).evaluate(activation)

    if not all(run(c["expression"]) for c in policy.get("matchConditions") or []):
        return SKIPPED
    for v in policy["validations"]:
        if not run(v["expression"]):
            return str(run(v["messageExpression"]))
    return ALLOWED


def request_for(kind: str, operation: str = "UPDATE", user: str = "alice", groups: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields of an admission request the policies read."""
    return {
        "operation": operation,
        "kind": {"kind": kind},
        "userInfo": {"username": user, "groups": [*groups, "system:authenticated"]},
    }
