"""The web UI and RBAC: deploy/ alone grants every read the UI makes (tests/deploy/test_rbac.py reads every route);
the optional ui component adds only the UI's credentials; a kind the UI may not read is never shown as Missing."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from kdsim.apiserver.faults import FORBIDDEN
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.deploy.test_rbac import ROOT, SA_USER, SYSTEM_NS, checks, granted, rules
from tests.deploy.uiroutes import ui_paths
from tests.e2e.harness import E2E, NS


def ui_overlay(tmp: Path) -> Path:
    """An overlay of deploy/ with the optional ui component, as docs/ui.md tells users to write it."""
    overlay = tmp / "overlay"
    overlay.mkdir()
    rel = os.path.relpath(ROOT / "deploy", overlay)
    (overlay / "kustomization.yaml").write_text(f"resources: [{rel}]\ncomponents: [{rel}/optional/ui]\n")
    return overlay


def get(url: str, auth: str) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": auth})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_ui_component_adds_credentials_only_and_every_ui_read_is_granted(tmp_path: Path) -> None:
    overlay = ui_overlay(tmp_path)
    rendered = subprocess.run(["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, timeout=60, check=False)
    assert rendered.returncode == 0, rendered.stderr
    [deployment] = [d for d in yaml.safe_load_all(rendered.stdout) if d and d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert "--ui-auth-file=/etc/gitops-kd/ui/auth" in pod["containers"][0]["args"]
    assert {"name": "ui-auth", "mountPath": "/etc/gitops-kd/ui", "readOnly": True} in pod["containers"][0]["volumeMounts"]
    assert any(v["name"] == "ui-auth" and v["secret"]["secretName"] == "gitops-kd-ui" for v in pod["volumes"])
    cluster_rules, role_rules = rules(overlay)
    base_rules, _ = rules()
    auth_file = tmp_path / "ui-auth"
    auth_file.write_text("basic viewer:look-only\n")
    auth = "Basic " + base64.b64encode(b"viewer:look-only").decode()
    world = E2E(tmp_path / "world")
    proc: RunProcess | None = None
    try:
        world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
        kubeconfig = token_kubeconfig(world.cluster, tmp_path / "sa.kubeconfig", SA_USER)
        proc = RunProcess(
            "controller",
            tmp_path,
            kubeconfig,
            str(world.repo),
            "--namespace",
            NS,
            "--no-leader-elect",
            "--ui-auth-file",
            str(auth_file),
            env={"POD_NAMESPACE": SYSTEM_NS},
        )
        world.wait_ready_at("1.0.0", timeout=120)
        url = proc.url()
        for path in ui_paths(NS, "hello-dev", "hello"):
            assert get(url + path, "Basic eDp5")[0] == 401, path
            status, body = get(url + path, auth)
            assert status == 200, (path, body[-500:])
            assert "Not shown" not in body, path  # the sim grants everything: nothing is missing
        assert proc.stop() == 0, proc.log()[-3000:]
        entries = world.cluster.access_log.entries(SA_USER)
    finally:
        if proc is not None:
            proc.stop()
        world.close()
    denied = sorted(
        {(c.verb, c.group, c.rbac_resource) for e in entries for c in checks(e) if not granted(cluster_rules, role_rules, c)}
    )
    assert not denied, f"deploy/ with optional/ui does not grant: {denied}"
    assert cluster_rules == base_rules, "the ui component grants nothing deploy/ does not"
    assert not {e for e in entries if e.resource == "secrets"}, "the UI never reads Secrets"


def test_a_kind_the_ui_may_not_list_is_not_readable_never_missing(tmp_path: Path) -> None:
    """Invariant: an object the UI could not read (RBAC 403 on listing its kind) is shown Unknown, "not readable",
    and the kind is named as not shown; never Missing (a Bound PVC must not look lost)."""
    world = E2E(tmp_path / "world")
    proc: RunProcess | None = None
    try:
        world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
        kubeconfig = token_kubeconfig(world.cluster, tmp_path / "sa.kubeconfig", SA_USER)
        proc = RunProcess(
            "controller",
            tmp_path,
            kubeconfig,
            str(world.repo),
            "--namespace",
            NS,
            "--no-leader-elect",
            env={"POD_NAMESPACE": SYSTEM_NS},
        )
        world.wait_ready_at("1.0.0", timeout=120)
        world.cluster.faults.add(FORBIDDEN, "list", "persistentvolumeclaims", 1000, user=SA_USER)
        status, body = get(proc.url() + f"/ui/api/clusters/{NS}/hello-dev", "")
        assert status == 200, body
        view = json.loads(body)["data"]
        pvcs = [o for o in view["objects"] if o["kind"] == "PersistentVolumeClaim"]
        assert pvcs and all(o["status"] == "Unknown" and "not readable" in o["message"] for o in pvcs), pvcs
        assert not [o for o in view["objects"] if o["status"] == "Missing"], view["objects"]
        assert "persistentvolumeclaims" in view["forbidden"]
    finally:
        if proc is not None:
            proc.stop()
        world.close()
