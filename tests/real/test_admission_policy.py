"""deploy/optional/admission-policy on a real kube-apiserver (ValidatingAdmissionPolicy, GA in 1.30): the attacks of
tests/real/policycases.py refused or allowed by the real policy, and cel-python's verdict (tests/celpolicy.py, the
fast check of tests/deploy) held to the real answer case by case; on a server older than 1.30 the component is
refused as an unknown kind."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.testing import wait_for
from tests.celpolicy import ALLOWED, SKIPPED, policies, policy_documents, request_for, verdict
from tests.real.controlplane import CRD_FILES, ROOT, VAP_STATUS_MINOR, ControlPlane
from tests.real.policycases import (
    APPLIED,
    ATTACKER,
    ATTACKS,
    GITOPS_KD_SA,
    GLASS_GROUP,
    KUBEDIRECTOR_SA,
    Attack,
    kdcluster,
    workloads,
)

pytestmark = pytest.mark.real

DENIAL = re.compile(r"ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)' denied request: (.*)")
ALLOWED_REAL = "allowed"


def _documents(tmp_path: Path) -> str:
    return "\n---\n".join(yaml.safe_dump(d) for d in policy_documents(tmp_path))


@pytest.fixture
def policy_on(real_cp: ControlPlane, tmp_path: Path) -> Iterator[ControlPlane]:
    """The component's policies and bindings applied (removed afterwards: they bind every namespace of the
    shared control plane), and the attackers allowed by RBAC to try (so what refuses them is admission)."""
    if real_cp.minor < VAP_STATUS_MINOR:
        pytest.skip(f"ValidatingAdmissionPolicy is GA in 1.{VAP_STATUS_MINOR}; this server is {real_cp.version}")
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "gitops-kd-tests-attackers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [
            *(
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u}
                for u in (ATTACKER, GITOPS_KD_SA, KUBEDIRECTOR_SA)
            ),
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": GLASS_GROUP},
        ],
    }
    real_cp.kubectl("apply", "-f", "-", stdin=json.dumps(binding))
    real_cp.kubectl("apply", "-f", "-", stdin=_documents(tmp_path / "apply"))
    try:
        yield real_cp
    finally:
        real_cp.kubectl("delete", "--ignore-not-found", "-f", "-", stdin=_documents(tmp_path / "again"))
        real_cp.kubectl("delete", "--ignore-not-found", "clusterrolebinding", "gitops-kd-tests-attackers")


def _kubectl(cp: ControlPlane, ns: str, attack: Attack, *extra: str) -> tuple[int, str, str]:
    who = [f"--as={attack.user}", *(f"--as-group={g}" for g in attack.groups)]
    done = cp.kubectl(*who, "-n", ns, *attack.argv, *extra, stdin=attack.stdin, check=False)
    return done.returncode, done.stdout, done.stderr


def _real_answer(code: int, stderr: str) -> tuple[str, str]:
    """("allowed", "") or (policy, message) from kubectl's exit code and error."""
    if code == 0:
        return ALLOWED_REAL, ""
    found = DENIAL.search(stderr)
    assert found, f"refused, but not by a ValidatingAdmissionPolicy: {stderr}"
    return found.group(1), found.group(3).strip()


def _cel_answer(specs: dict[str, dict[str, Any]], attack: Attack, obj: Any, old: Any) -> tuple[str, str]:
    """cel-python's answer in the same shape: the first policy that denies, and its message."""
    request = request_for(attack.kind, attack.operation, attack.user, attack.groups)
    for name, spec in sorted(specs.items(), reverse=True):  # gitops-kd-workloads, gitops-kd-specs
        said = verdict(spec, request, obj, old)
        if said not in (SKIPPED, ALLOWED):
            return name, said
    return ALLOWED_REAL, ""


def _setup(cp: ControlPlane, ns: str) -> None:
    for crd in CRD_FILES:
        cp.kubectl("apply", "-f", str(crd))
    cp.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/kubedirectorclusters.kubedirector.hpe.com")
    made = json.loads(cp.kubectl("-n", ns, "create", "-o", "json", "-f", "-", stdin=json.dumps(kdcluster())).stdout)
    app = yaml.safe_load((ROOT / "repo-template" / "apps" / "hello.yaml").read_text())
    app["metadata"]["annotations"] = {APPLIED: "abc"}
    for doc in [*workloads(made["metadata"]["uid"]), app]:
        cp.kubectl("-n", ns, "create", "-f", "-", stdin=json.dumps(doc))


def test_the_policy_refuses_the_attacks_on_a_real_server_and_cel_python_agrees(policy_on: ControlPlane, tmp_path: Path) -> None:
    """Invariant (issues 28 and 43): each attack of tests/real/policycases.py is refused by the real API server's
    ValidatingAdmissionPolicy with the policy's message, or allowed, as the table says; and cel-python, given the
    same request, the object as the server stored it before (oldObject) and as it would store it (object: the same
    command as a server dry-run by the break-glass group), gives the same answer."""
    cp = policy_on
    ns = f"vap-{uuid.uuid4().hex[:6]}"
    cp.kubectl("create", "namespace", ns)
    _setup(cp, ns)
    specs = policies(tmp_path / "cel")
    probe = next(a for a in ATTACKS if a.denied_by)
    # a new policy takes effect once the API server's informer has it: wait for the first refusal
    wait_for("the policy in force", lambda: _kubectl(cp, ns, probe, "--dry-run=server")[0] != 0, 60)
    rows = []
    for attack in ATTACKS:
        old = json.loads(cp.kubectl("-n", ns, "get", attack.target, "-o", "json").stdout)
        obj = None
        if attack.operation == "UPDATE":
            as_glass = Attack(**{**attack.__dict__, "groups": (GLASS_GROUP,)})
            code, out, err = _kubectl(cp, ns, as_glass, "--dry-run=server", "-o", "json")
            assert code == 0, f"{attack.name}: the dry-run for the object failed: {err}"
            obj = json.loads(out)
        code, _out, err = _kubectl(cp, ns, attack)
        real = _real_answer(code, err)
        rows.append((attack.name, real, _cel_answer(specs, attack, obj, old)))
        assert real[0] == (attack.denied_by or ALLOWED_REAL), f"{attack.name}: the real server answered {real}"
    differ = [(name, real, cel) for name, real, cel in rows if real != cel]
    assert not differ, f"cel-python differs from the real server: {differ}"


def test_a_server_before_1_30_refuses_the_component_as_an_unknown_kind(real_cp: ControlPlane, tmp_path: Path) -> None:
    """On v1.20.2 (no ValidatingAdmissionPolicy) the component cannot be applied; docs/reference.md says 1.30+."""
    if real_cp.minor >= VAP_STATUS_MINOR:
        pytest.skip(f"this server ({real_cp.version}) serves ValidatingAdmissionPolicy")
    done = real_cp.kubectl("apply", "--dry-run=server", "-f", "-", stdin=_documents(tmp_path), check=False)
    assert done.returncode != 0
    assert 'no matches for kind "ValidatingAdmissionPolicy"' in done.stderr, done.stderr
