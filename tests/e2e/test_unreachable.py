"""A member unreachable through its own Service is named the same way by the KDRollout (status.unreachable),
`gitops-kd status` (table, JSON, exit status) and the web UI's cluster page, and stops being named once its
Service targets its pod's ports again (issue 42, 3). The drift policy alert-only keeps a hand edit in place."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from gitops_kd.server.ui import UiSettings
from tests.e2e.harness import E2E, wait_for

CLI = [str(Path(sys.executable).parent / "gitops-kd")]
ALERT_ONLY = '    gitops-kd.io/drift-policy: "alert-only"\n'


def _status(e2e: E2E, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "status", "hello-dev", "-n", e2e.ns, "--kubeconfig", str(e2e.backend.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _recorded(e2e: E2E) -> list[dict[str, Any]]:
    return list(((e2e.rollout() or {}).get("status") or {}).get("unreachable") or [])


def _ui(url: str, path: str) -> str:
    with urllib.request.urlopen(f"{url}{path}", timeout=10) as reply:
        return str(reply.read().decode())


def _service_of(e2e: E2E, pod: str) -> str:
    services = e2e.rest.list("v1", "services", e2e.ns)["items"]
    return next(
        s["metadata"]["name"]
        for s in services
        if (s["spec"].get("selector") or {}).get("statefulset.kubernetes.io/pod-name") == pod
    )


def _set_port(e2e: E2E, service: str, port: int) -> None:
    """The Service's port and its targetPort (the API server defaulted it to the port KubeDirector gave) to
    ``port``, as a port change of the app writes them."""
    patch = json.dumps(
        [
            {"op": "replace", "path": "/spec/ports/0/port", "value": port},
            {"op": "replace", "path": "/spec/ports/0/targetPort", "value": port},
        ]
    )
    done = e2e.kubectl("patch", "service", service, "--type=json", f"-p={patch}")
    assert done.returncode == 0, done.stderr


def test_a_member_whose_service_misses_its_pod_is_named_by_the_record_the_cli_and_the_ui(e2e: E2E) -> None:
    cluster = (e2e.repo / "clusters" / "hello-dev.yaml").read_text()
    assert "  annotations:\n" in cluster
    e2e.commit({"clusters/hello-dev.yaml": cluster.replace("  annotations:\n", "  annotations:\n" + ALERT_ONLY, 1)}, "alert-only")
    controller = e2e.start_controller(listen=("127.0.0.1", 0), ui=UiSettings(refresh_seconds=0.25, cache_seconds=0.1))
    assert controller.http is not None
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    quiet = _status(e2e, "-o", "json")
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["unreachable"] == [], quiet.stdout + quiet.stderr
    assert "unreachable members: none" in _status(e2e).stdout

    worker = e2e.pods_by_role()["worker"][0]
    service = _service_of(e2e, worker)
    _set_port(e2e, service, 9999)
    expected = [{"pod": worker, "service": service, "servicePorts": [9999], "podPorts": [8080]}]
    wait_for("the KDRollout naming the member unreachable", lambda: _recorded(e2e) == expected, 30)
    shown = _status(e2e, "-o", "json")
    assert shown.returncode == 1, shown.stdout + shown.stderr  # the member Service is Degraded
    data = json.loads(shown.stdout)
    assert data["unreachable"] == expected and data["status"] == "Degraded", data
    row = next(o for o in data["objects"] if o["kind"] == "Service" and o["name"] == service)
    said = f"{worker}: Service {service} targets port(s) 9999 but the pod listens on 8080"
    assert (row["status"], row["message"]) == ("Degraded", f"unreachable: {said}"), row
    table = _status(e2e).stdout
    assert "unreachable members (1):" in table and said in table, table
    view = json.loads(_ui(controller.http.url, f"/ui/api/clusters/{e2e.ns}/hello-dev"))["data"]
    assert view["unreachable"] == expected, view
    assert next(s for s in view["services"] if s["name"] == service)["unreachable"] == said
    page = _ui(controller.http.url, f"/ui/clusters/{e2e.ns}/hello-dev")
    assert "Unreachable members (1)" in page and f'data-pod="{worker}"' in page, page

    _set_port(e2e, service, 8080)
    wait_for("the record cleared", lambda: _recorded(e2e) == [], 30)
    again = _status(e2e, "-o", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["unreachable"] == [], again.stdout
    assert "Unreachable members: none." in _ui(controller.http.url, f"/ui/clusters/{e2e.ns}/hello-dev")
