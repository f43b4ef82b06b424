"""Alerts end to end through a real `gitops-kd run`: an out-of-band edit, a refused commit, a stalled rollout and an
unreadable Git repo each reach a real Alertmanager-shaped and a JSON webhook receiver, and each is resolved when
its condition ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.deploy.runner import RunProcess
from tests.drift.receiver import Receiver
from tests.e2e.harness import E2E, NS, exec_unavailable, hello_app, wait_for


def _am(rx: Receiver, source: str, state: str) -> list[dict[str, Any]]:
    """The Alertmanager alerts of ``source`` POSTed so far, firing (no endsAt) or resolved."""
    out = [a for body in list(rx.bodies) if isinstance(body, list) for a in body if a["labels"]["source"] == source]
    return [a for a in out if ("endsAt" in a) == (state == "resolved")]


def test_four_sources_fire_once_and_resolve(tmp_path: Path) -> None:
    """Invariant: each condition (drift, refused commit, stall, Git unreadable) fires one alert while it lasts and
    a resolve with the same labels when it ends; the drift alert on the JSON webhook keeps the drift payload."""
    world = E2E(tmp_path)
    am, hook = Receiver().__enter__(), Receiver().__enter__()
    proc = RunProcess(
        "ctl",
        tmp_path,
        world.cluster.kubeconfig,
        str(world.repo),
        "--namespace",
        NS,
        "--no-leader-elect",
        "--alert-alertmanager",
        am.url.removesuffix("/hook"),
        "--alert-webhook",
        hook.url,
    )
    try:
        world.wait_ready_at("1.0.0", timeout=120)
        roles = world.pods_by_role()
        sts = next(
            s
            for s in world.rest.list("apps/v1", "statefulsets", NS)["items"]
            if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
        )["metadata"]["name"]

        # 1. drift: edit until the edit is drift (the first sight in sync sets the baseline), then reverted
        def edit() -> list[dict[str, Any]] | None:
            assert world.kubectl("set", "image", f"statefulset/{sts}", "app=gitops-kd/hello:6.6.6").returncode == 0
            return _am(am, "drift", "firing") or None

        wait_for("a drift alert", edit, 60, 1.0)
        resolved = wait_for("the drift resolved", lambda: _am(am, "drift", "resolved"), 60)
        assert resolved[0]["labels"]["name"] == sts and resolved[0]["labels"]["kind"] == "StatefulSet"
        drift_bodies = [b for b in hook.bodies if isinstance(b, dict) and "fields" in b]
        assert {b["state"] for b in drift_bodies} >= {"detected", "resolved"}  # the --drift-webhook payload

        # 2. a refused commit, then a good commit ends it
        world.commit({"apps/hello.yaml": "kind: [not yaml"}, "broken")
        refused = wait_for("a refused-commit alert", lambda: _am(am, "refused-commit", "firing"), 60)
        assert refused[0]["labels"]["kind"] == "GitOpsKDSource"
        world.commit({"apps/hello.yaml": hello_app("1.0.0", upgrade=True)}, "fixed")
        wait_for("the refusal resolved", lambda: _am(am, "refused-commit", "resolved"), 60)
        assert len(_am(am, "refused-commit", "firing")) == 1

        # 3. Git unreadable, then readable again
        hidden = world.repo.with_name("hidden-repo")
        world.repo.rename(hidden)
        try:
            wait_for("a git-health alert", lambda: _am(am, "git-health", "firing"), 60)
        finally:
            hidden.rename(world.repo)
        wait_for("Git health resolved", lambda: _am(am, "git-health", "resolved"), 60)

        # 4. a stalled rollout (a gate that never passes), then a fix
        if (reason := exec_unavailable(world, roles["controller"][0])) is not None:
            pytest.skip(f"embedded node cannot exec into the app container: {reason}")
        stanza = {
            "roleOrder": ["controller", "worker"],
            "from": [{"versions": ">=1.0.0 <2.0.0", "default": "keep"}],
            "gate": {"exec": {"command": ["/bin/sh", "-c", "exit 1"]}, "periodSeconds": 1, "timeoutSeconds": 2},
        }
        world.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=stanza)}, "a gate that never passes")
        stalled = wait_for("a stall alert", lambda: _am(am, "stall", "firing"), 90)
        assert stalled[0]["labels"]["name"] == "hello-dev" and stalled[0]["labels"]["reason"] == "GateTimeout"
        stanza["gate"]["exec"]["command"] = ["/bin/sh", "-c", "true"]
        world.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=stanza)}, "fix the gate")
        world.wait_ready_at("2.0.0", timeout=120)
        wait_for("the stall resolved", lambda: _am(am, "stall", "resolved"), 60)
        assert len(_am(am, "stall", "firing")) == 1
    finally:
        proc.stop()
        am.__exit__()
        hook.__exit__()
        world.close()
