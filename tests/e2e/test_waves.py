"""Waves: the wave-1 cluster of an app is upgraded only after the wave-0 cluster is Ready at the target."""

from __future__ import annotations

import yaml

from tests.e2e.harness import E2E, TEMPLATE, PodWatch, hello_app, pod_ready, wait_for


def prod_cluster() -> str:
    doc = yaml.safe_load((TEMPLATE / "clusters" / "hello-dev.yaml").read_text())
    doc["metadata"]["name"] = "hello-prod"
    doc["metadata"]["labels"] = {"gitops-kd.io/wave": "1"}
    for role in doc["spec"]["roles"]:
        role["members"] = 1
    return yaml.safe_dump(doc)


def test_later_wave_waits_for_the_earlier_one(e2e: E2E) -> None:
    e2e.commit({"clusters/hello-prod.yaml": prod_cluster()}, "a wave-1 cluster")
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_ready_at("1.0.0", name="hello-prod")
    e2e.wait_settled()
    wait_for("hello-prod pods Ready", lambda: len(p := e2e.pods("hello-prod")) == 2 and all(map(pod_ready, p)))
    dev = PodWatch(e2e.rest, "hello-dev", expected=3)
    prod = PodWatch(e2e.rest, "hello-prod", expected=2)
    e2e.commit(
        {"apps/hello.yaml": hello_app("2.0.0", upgrade={"from": [{"versions": ">=1.0.0 <2.0.0", "default": "keep"}]})},
        "hello 2.0.0",
    )
    held = wait_for(
        "hello-prod's KDRollout saying what it waits for",
        lambda: next(
            (
                line
                for line in e2e.kubectl("get", "kdro", "hello-prod", "-o", "wide").stdout.splitlines()
                if line.startswith("hello-prod") and "waiting for cluster default/hello-dev" in line
            ),
            None,
        ),
        60,
        0.1,
    )
    assert "(wave 0) to be Ready at the target first" in held
    assert not dev.deleted or len(prod.deleted) == 0
    e2e.wait_ready_at("2.0.0", name="hello-prod", timeout=120)
    assert "waiting for" not in (e2e.rollout("hello-prod")["status"].get("step") or "")
    dev.stop()
    prod.stop()
    assert len(dev.deleted) == 3 and len(prod.deleted) == 2
    assert max(t for _n, _r, t in dev.deleted) < min(t for _n, _r, t in prod.deleted)
    assert dev.max_down == 1 and prod.max_down == 1
    # (both KDRollouts record their start at once: from-versions are recorded before the KDApp changes)
    assert e2e.rollout("hello-dev")["status"]["appVersion"] == "2.0.0"
