"""What the GitOpsKDSource and the web UI say of a suspended and of a Stalled cluster (kstatus, docs/concepts.md):
the UI's "Desired (Git)" is Git's version whatever the cluster does; a suspended cluster is a notice, neither a red
alert nor Progressing; a Stalled rollout leaves the source Stalled, never Ready=True."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from click.testing import CliRunner

from gitops_kd.cli import main
from gitops_kd.server.ui import UiSettings
from kdsim import images
from kdsim.images import ImageBehavior
from tests.e2e.harness import E2E, HELLO_2, hello_app, wait_for
from tests.e2e.test_status_sync import source_status

LIVE = UiSettings(refresh_seconds=0.25, cache_seconds=0.1)
BROKEN = "2.0.1"  # an image whose containers never become Ready


def _fleet(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/ui/api/fleet", timeout=10) as reply:
        found: dict[str, Any] = json.loads(reply.read())
        return found


def _condition(e2e: E2E, kind: str) -> dict[str, Any]:
    return next((c for c in source_status(e2e).get("conditions") or () if c.get("type") == kind), {})


def test_a_suspended_cluster_shows_gits_version_as_desired_and_is_a_notice_not_an_alert(e2e: E2E) -> None:
    """Invariant: while hello-dev is suspended at 2.0.0 and HEAD asks for 1.0.0, the fleet page's Desired (Git) is
    1.0.0, the suspend is a notice and no alert, and the source is Ready=False (Suspended) without Reconciling or
    Stalled; `gitops-kd status` exits 0."""
    controller = e2e.start_controller(listen=("127.0.0.1", 0), ui=LIVE, record=True)
    e2e.wait_ready_at("1.0.0")
    upgrade = e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    e2e.wait_ready_at("2.0.0", timeout=120)
    e2e.wait_settled()
    suspended = CliRunner().invoke(main, ["suspend", "hello-dev", "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert suspended.exit_code == 0, suspended.output
    e2e.commit({"apps/hello.yaml": e2e.template("apps/hello.yaml")}, f"back to hello 1.0.0 (after {upgrade[:12]})")
    assert controller.http is not None
    url = controller.http.url
    wait_for("the source to say the cluster is suspended", lambda: _condition(e2e, "Ready").get("reason") == "Suspended", 60)
    assert _condition(e2e, "Reconciling") == {} and _condition(e2e, "Stalled") == {}, source_status(e2e)["conditions"]
    assert "default/hello-dev" in _condition(e2e, "Ready")["message"]
    fleet = _fleet(url)
    app = next(a for a in fleet["data"]["apps"] if a["name"] == "hello")
    assert app["desiredVersion"] == "1.0.0", app
    assert fleet["data"]["alerts"] == [], fleet["data"]["alerts"]
    assert [(n["reason"], n["object"]) for n in fleet["data"]["notices"]] == [("Suspended", "KDRollout default/hello-dev")]
    assert '<li class="notice">' in fleet["html"] and '<li class="alert' not in fleet["html"]
    assert "1 notice(s)" in fleet["summary"] and "alert" not in fleet["summary"]
    shown = CliRunner().invoke(main, ["status", "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert shown.exit_code == 0, shown.output


def test_a_stalled_rollout_leaves_the_source_stalled_not_ready(e2e: E2E) -> None:
    """Invariant: once the applied commit's rollout is Stalled in a cluster, the GitOpsKDSource is Stalled=True
    (RolloutStalled, naming the cluster and the stall's reason) and Ready=False, never Ready=True while it lasts; the
    UI lists the stall once (the KDRollout's alert, not the source's too)."""
    controller = e2e.start_controller(listen=("127.0.0.1", 0), ui=LIVE, record=True)
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    wait_for("the source Ready at 1.0.0", lambda: _condition(e2e, "Ready").get("status") == "True", 60)
    images.store_for(e2e.cluster).add(f"gitops-kd/hello:{BROKEN}", HELLO_2, behavior=ImageBehavior(never_ready=True))
    stanza = {
        "roleOrder": ["controller", "worker"],
        "from": [{"versions": ">=1.0.0 <2.0.1", "default": "keep"}],
        "podReadyTimeoutSeconds": 3,
    }
    e2e.commit({"apps/hello.yaml": hello_app(BROKEN, upgrade=stanza)}, f"hello {BROKEN}")
    wait_for(
        "the rollout Stalled",
        lambda: ((e2e.rollout() or {}).get("status") or {}).get("phase") == "Stalled",
        120,
    )
    wait_for("the source Stalled", lambda: _condition(e2e, "Stalled").get("status") == "True", 60)
    stalled, ready = _condition(e2e, "Stalled"), _condition(e2e, "Ready")
    assert stalled["reason"] == "RolloutStalled" and ready["status"] == "False", source_status(e2e)["conditions"]
    assert "default/hello-dev (PodNotReady)" in stalled["message"], stalled
    assert controller.http is not None
    alerts = _fleet(controller.http.url)["data"]["alerts"]
    assert [a["object"] for a in alerts] == ["KDRollout default/hello-dev"], alerts
