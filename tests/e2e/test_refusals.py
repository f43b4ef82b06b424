"""Forbidden changes: the whole commit is refused, nothing is applied, the error names the file."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.e2e.harness import E2E, KD, NS, TEMPLATE, hello_app, wait_for


def _snapshot(e2e: E2E) -> dict[str, Any]:
    app = e2e.rest.get(KD, "kubedirectorapps", NS, "hello")
    sets = e2e.rest.list("apps/v1", "statefulsets", NS)["items"]
    return {
        "app": app["metadata"]["resourceVersion"],
        "sets": {s["metadata"]["name"]: (s["metadata"]["generation"], s["spec"]) for s in sets},
        "pods": sorted(p["metadata"]["uid"] for p in e2e.pods()),
    }


def _worker_removed() -> dict[str, str]:
    app = yaml.safe_load(hello_app("2.0.0"))
    app["spec"]["roles"] = [r for r in app["spec"]["roles"] if r["id"] != "worker"]
    app["spec"]["config"] = {"selectedRoles": ["controller"], "roleServices": []}
    app["spec"]["upgrade"].pop("roleOrder", None)
    cluster = yaml.safe_load((TEMPLATE / "clusters" / "hello-dev.yaml").read_text())
    cluster["spec"]["roles"] = [r for r in cluster["spec"]["roles"] if r["id"] != "worker"]
    return {"apps/hello.yaml": yaml.safe_dump(app), "clusters/hello-dev.yaml": yaml.safe_dump(cluster)}


CASES = {
    "distroID": lambda: {"apps/hello.yaml": hello_app("2.0.0", distroID="someone-else/hello")},
    "downgrade-not-allowed": lambda: {"apps/hello.yaml": hello_app("0.9.0", upgrade=None)},
    "upgrade-from-unlisted-version": lambda: {
        "apps/hello.yaml": hello_app("2.0.0", upgrade={"from": [{"versions": ">=1.5.0 <2.0.0", "default": "keep"}]})
    },
    "role-with-members-removed": _worker_removed,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_forbidden_change_is_refused_and_nothing_applied(e2e: E2E, case: str) -> None:
    controller = e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    applied = controller.source.applied_commit
    before = _snapshot(e2e)
    sha = e2e.commit(CASES[case](), f"forbidden: {case}")
    refusal = wait_for(
        "the commit refused",
        lambda: controller.refusals.last if controller.refusals.last and controller.refusals.last[0] == sha else None,
        30,
    )
    assert any(line.startswith("apps/hello.yaml: ") for line in refusal[1]), refusal
    events = wait_for(
        "CommitRefused event", lambda: [e for e in e2e.rest.list("v1", "events", NS)["items"] if e["reason"] == "CommitRefused"]
    )
    assert events[0]["type"] == "Warning" and "apps/hello.yaml" in events[0]["message"]
    assert events[0]["involvedObject"]["kind"] in ("KubeDirectorApp", "KubeDirectorCluster")
    controller.kick()
    e2e.wait_settled()  # still reconciling the last applied commit: nothing to do
    assert _snapshot(e2e) == before
    assert controller.source.applied_commit == applied
    assert e2e.rest.get(KD, "kubedirectorapps", NS, "hello")["spec"]["version"] == "1.0.0"
