"""Out-of-band edits blocked at admission, end to end: deploy/ with the optional admission component applied to
the embedded cluster, a real `gitops-kd run` serving the webhook as its ServiceAccount, real kubectl edits.

Invariants: an edit of a field gitops-kd owns is refused before it is stored (the object keeps Git's value),
with a message naming the object, the field, the Git file and the break-glass; gitops-kd's own writes and a
break-glass pass (the break-glass audited by Event, metric and log); with the webhook unreachable
(failurePolicy Ignore) the edit passes and drift revert undoes it; a live upgrade runs to the end with the
webhook on; every request gitops-kd makes is granted by deploy/ plus the component.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.deploy.test_rbac import ROOT, SA_USER, SYSTEM_NS, checks, granted, rules
from tests.e2e.harness import E2E, NS

ADMISSION = re.compile(r"serving the admission webhook on https://127\.0\.0\.1:(\d+)/admission")
WORKLOADS, SPECS = "workloads.admission.gitops-kd.io", "specs.admission.gitops-kd.io"
VWC = "admissionregistration.k8s.io/v1", "validatingwebhookconfigurations"
GLASS_GROUP = "gitops-kd:break-glass"
KD_USER = "system:serviceaccount:kubedirector:kubedirector"  # `gitops-kd run --kubedirector-user`'s default


def overlay(tmp: Path) -> Path:
    """deploy/ with the optional admission component, as docs/drift.md tells users to write it."""
    path = tmp / "overlay"
    path.mkdir(parents=True)
    rel = os.path.relpath(ROOT / "deploy", path)
    (path / "kustomization.yaml").write_text(f"resources: [{rel}]\ncomponents: [{rel}/optional/admission]\n")
    return path


def _render(path: Path) -> list[dict[str, Any]]:
    out = subprocess.run(["kubectl", "kustomize", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def endpoints(world: E2E, *ports: int) -> None:
    """What the endpoints controller writes for the Service when gitops-kd pods serve on `ports` (one subset per
    port: every process listens on loopback here)."""
    body = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "gitops-kd-admission", "namespace": SYSTEM_NS},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "admission", "port": port}]} for port in ports],
    }
    _apply(world, body)


def install(world: E2E, tmp: Path, *docs: dict[str, Any]) -> Path:
    """gitops-kd's namespace and `docs` (the webhook's Service and configuration) in the world; the kubeconfig of
    gitops-kd's ServiceAccount."""
    world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
    for doc in docs:
        _apply(world, doc)
    return token_kubeconfig(world.cluster, tmp / "sa.kubeconfig", SA_USER)


def admission_port(proc: RunProcess) -> int:
    """The port `proc` serves the admission webhook on, once it does."""

    def found() -> int | None:
        assert proc.alive, proc.log()[-3000:]
        m = ADMISSION.search(proc.log())
        return int(m.group(1)) if m else None

    return wait_for(f"{proc.name} serving the admission webhook", found, 90)


def serve_admission(world: E2E, tmp: Path, service: dict[str, Any], vwc: dict[str, Any]) -> tuple[RunProcess, int]:
    """`gitops-kd run` as gitops-kd's ServiceAccount serving the webhook `service` and `vwc` (installed here) with
    the break-glass group, its Endpoints made and its caBundle filled in, hello at 1.0.0: (process, webhook port).
    The caller stops the process."""
    kubeconfig = install(world, tmp, service, vwc)
    proc = RunProcess(
        "controller",
        tmp,
        kubeconfig,
        str(world.repo),
        "--namespace",
        NS,
        "--no-leader-elect",
        "--admission-listen",
        "127.0.0.1:0",
        "--break-glass-group",
        GLASS_GROUP,
        env={"POD_NAMESPACE": SYSTEM_NS},
    )
    try:
        port = admission_port(proc)
        endpoints(world, port)
        wait_for(
            "the caBundle filled in",
            lambda: all(w["clientConfig"].get("caBundle") for w in world.rest.get(*VWC, None, "gitops-kd")["webhooks"]),
            30,
        )
        world.wait_ready_at("1.0.0", timeout=120)
    except BaseException:
        proc.stop()
        raise
    return proc, port


def _apply(world: E2E, body: dict[str, Any]) -> None:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(world.cluster.kubeconfig), "apply", "-f", "-"],
        input=yaml.safe_dump(body),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def _metrics(proc: RunProcess) -> str:
    with urllib.request.urlopen(proc.url() + "/metrics", timeout=10) as resp:
        return str(resp.read().decode())


def _exempt(proc: RunProcess) -> float:
    """How many StatefulSet edits by gitops-kd's or KubeDirector's users the webhook let through unjudged."""
    m = re.search(r'gitops_kd_admission_requests_total{kind="StatefulSet",result="exempt"} ([0-9.e+]+)', _metrics(proc))
    return float(m.group(1)) if m else 0.0


def _events(world: E2E, reason: str) -> list[dict[str, Any]]:
    return [e for e in world.rest.list("v1", "events", NS)["items"] if e["reason"] == reason]


def test_owned_edits_are_denied_gitops_kd_and_break_glass_pass_and_ignore_falls_back_to_revert(tmp_path: Path) -> None:
    path = overlay(tmp_path)
    docs = _render(path)
    [vwc] = [d for d in docs if d["kind"] == "ValidatingWebhookConfiguration"]
    [service] = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "gitops-kd-admission"]
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    assert "--admission-listen=0.0.0.0:9443" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert {w["failurePolicy"] for w in vwc["webhooks"]} == {"Ignore"}
    cluster_rules, role_rules = rules(path)
    world = E2E(tmp_path / "world")
    proc: RunProcess | None = None
    try:
        proc, live_port = serve_admission(world, tmp_path, service, vwc)
        [sts] = [
            s["metadata"]["name"]
            for s in world.rest.list("apps/v1", "statefulsets", NS)["items"]
            if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
        ]

        def image() -> str:
            return str(world.rest.get("apps/v1", "statefulsets", NS, sts)["spec"]["template"]["spec"]["containers"][0]["image"])

        # 1. kubectl set image: denied, with the object, the field, the Git file and the break-glass named
        denied = world.kubectl("set", "image", f"statefulset/{sts}", "app=gitops-kd/hello:6.6.6")
        assert denied.returncode != 0
        assert (
            f'admission webhook "{WORKLOADS}" denied the request: StatefulSet {NS}/{sts} is managed by '
            "gitops-kd from Git: spec.template.spec.containers[app].image is owned by gitops-kd; change "
            "apps/hello.yaml or clusters/hello-dev.yaml in Git instead. Break-glass (audited): set the "
            'annotation gitops-kd.io/break-glass="<reason>" in this edit or a user in group '
            f"{GLASS_GROUP}"
        ) in denied.stderr
        assert image() == "gitops-kd/hello:1.0.0"
        # 2. `kubectl edit` (its editor a sed script) and a merge patch of the template; a label outside the
        # owned fields passes
        editor = {**os.environ, "KUBE_EDITOR": "sed -i -e s#gitops-kd/hello:1.0.0#gitops-kd/hello:6.6.6#"}
        edit = subprocess.run(
            ["kubectl", "--kubeconfig", str(world.cluster.kubeconfig), "edit", f"statefulset/{sts}"],
            env=editor,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert edit.returncode != 0 and f'admission webhook "{WORKLOADS}" denied the request' in edit.stderr
        assert image() == "gitops-kd/hello:1.0.0"
        patch = {
            "spec": {
                "template": {"spec": {"containers": [{"name": "app", "image": "gitops-kd/hello:6.6.6"}]}},
                "updateStrategy": {"type": "RollingUpdate"},
            }
        }
        edited = world.kubectl("patch", "statefulset", sts, "--type=merge", "-p", json.dumps(patch))
        assert edited.returncode != 0 and "spec.updateStrategy.type" in edited.stderr
        assert world.kubectl("label", "statefulset", sts, "team=blue").returncode == 0
        # 3. kubectl delete kdcluster: denied (deleting the KDApp is refused by stock KubeDirector first: in use)
        gone = world.kubectl("delete", "kdcluster", "hello-dev", "--wait=false")
        assert gone.returncode != 0
        assert (
            f'admission webhook "{SPECS}" denied the request: KubeDirectorCluster {NS}/hello-dev is managed by '
            "gitops-kd from Git: deleting it is owned by gitops-kd; change clusters/hello-dev.yaml in Git "
            "instead"
        ) in gone.stderr, gone.stderr
        assert world.rest.get("kubedirector.hpe.com/v1beta1", "kubedirectorclusters", NS, "hello-dev")
        assert wait_for("EditDenied events", lambda: len(_events(world, "EditDenied")) >= 4 or None, 20)
        assert 'gitops_kd_admission_requests_total{kind="StatefulSet",result="denied"} 3.0' in _metrics(proc)

        # 4. the same edit as gitops-kd's ServiceAccount passes (and drift revert puts Git's value back)
        own = world.kubectl("--token", SA_USER, "set", "image", f"statefulset/{sts}", "app=gitops-kd/hello:7.7.7")
        assert own.returncode == 0, own.stderr
        wait_for("gitops-kd's own edit reverted", lambda: image() == "gitops-kd/hello:1.0.0", 30)
        # 4b. KubeDirector's ServiceAccount (the identity KubeDirector writes its StatefulSets with) passes too,
        # through the webhook: counted as exempt, not judged against Git (and reverted like any drift)
        exempt = _exempt(proc)
        kd = world.kubectl("--token", KD_USER, "set", "image", f"statefulset/{sts}", "app=gitops-kd/hello:7.7.8")
        assert kd.returncode == 0, kd.stderr
        assert _exempt(proc) > exempt
        assert "by system:serviceaccount:kubedirector" not in proc.log()
        wait_for("KubeDirector's edit reverted", lambda: image() == "gitops-kd/hello:1.0.0", 30)
        # 5. break-glass by group, then by annotation: allowed, audited, and reverted like any drift
        glass = world.kubectl(
            "--as", "alice", "--as-group", GLASS_GROUP, "set", "image", f"statefulset/{sts}", "app=gitops-kd/hello:8.8.8"
        )
        assert glass.returncode == 0, glass.stderr
        assert "Warning: gitops-kd break-glass (group gitops-kd:break-glass)" in glass.stderr
        wait_for("the break-glass edit reverted", lambda: image() == "gitops-kd/hello:1.0.0", 30)
        annotated = {
            "metadata": {"annotations": {"gitops-kd.io/break-glass": "INC-42 hotfix"}},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "gitops-kd/hello:9"}]}}},
        }
        assert world.kubectl("patch", "statefulset", sts, "--type=merge", "-p", json.dumps(annotated)).returncode == 0
        audited = wait_for(
            "BreakGlassEdit events", lambda: len(_events(world, "BreakGlassEdit")) >= 2 and _events(world, "BreakGlassEdit"), 20
        )
        assert {e["type"] for e in audited} == {"Warning"}
        assert any("annotation 'INC-42 hotfix'" in e["message"] for e in audited)
        assert 'result="break-glass"} 2.0' in _metrics(proc)
        assert "allowed by break-glass" in proc.log()
        wait_for("the annotated edit reverted", lambda: image() == "gitops-kd/hello:1.0.0", 30)

        # 6. webhook unreachable, failurePolicy Ignore: the edit passes; drift revert is the backstop
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            closed = s.getsockname()[1]
        endpoints(world, closed)
        through = world.kubectl("set", "image", f"statefulset/{sts}", "app=gitops-kd/hello:6.6.6")
        assert through.returncode == 0, through.stderr
        wait_for("the edit that got through reverted", lambda: image() == "gitops-kd/hello:1.0.0", 30)

        # 7. a live upgrade runs to the end with the webhook on
        endpoints(world, live_port)
        denied_before = len(_events(world, "EditDenied"))
        world.commit({"apps/hello.yaml": world.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
        world.wait_ready_at("2.0.0", timeout=120)
        assert len(_events(world, "EditDenied")) == denied_before
        assert proc.stop() == 0, proc.log()[-3000:]
        entries = world.cluster.access_log.entries(SA_USER)
    finally:
        if proc is not None:
            proc.stop()
        world.close()
    denied_rbac = sorted(
        {(c.verb, c.group, c.rbac_resource) for e in entries for c in checks(e) if not granted(cluster_rules, role_rules, c)}
    )
    assert not denied_rbac, f"deploy/ with optional/admission does not grant: {denied_rbac}"
    used = {(e.verb, e.group, e.rbac_resource) for e in entries}
    assert {
        ("create", "", "secrets"),
        ("get", "", "secrets"),
        ("get", "admissionregistration.k8s.io", "validatingwebhookconfigurations"),
        ("patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    } <= used
