"""`git revert` of an upgrade downgrades live (restore rule); an out-of-band StatefulSet edit is reverted."""

from __future__ import annotations

import pytest

from tests.e2e.harness import E2E, PodWatch, exec_unavailable, git, wait_for


def test_git_revert_downgrades_and_restores_the_set_aside_data(e2e: E2E) -> None:
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    roles = e2e.pods_by_role()
    pods = roles["controller"] + roles["worker"]
    if (reason := exec_unavailable(e2e, pods[0])) is not None:
        pytest.skip(f"embedded node cannot exec into the app container: {reason}")
    for pod in pods:
        e2e.sh(pod, "echo written-at-1.0.0 > /var/lib/hello/user.txt")
    e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    e2e.wait_ready_at("2.0.0", timeout=120)
    e2e.wait_settled()
    for pod in pods:
        e2e.sh(pod, "echo written-at-2.0.0 > /var/lib/hello/user.txt")
    watch = PodWatch(e2e.rest, "hello-dev", expected=3)
    git(e2e.repo, "revert", "--no-edit", "HEAD")
    assert e2e.controller is not None
    e2e.controller.trigger_poll()
    ro = e2e.wait_ready_at("1.0.0", timeout=120)
    watch.stop()
    assert ro["status"]["history"][-1]["version"] == "1.0.0"
    assert ro["status"]["history"][-1]["fromVersion"] == "2.0.0"
    assert watch.max_down == 1 and len(watch.deleted) == 3
    for pod in pods:
        # restore: the copy the upgrade set aside comes back; 2.0.0's files are gone
        assert e2e.sh(pod, "cat /var/lib/hello/user.txt") == "written-at-1.0.0\n"
        assert e2e.sh(pod, "test -e /var/lib/hello/new-in-2 && echo present || echo absent") == "absent\n"
        assert e2e.sh(pod, "cat /opt/hello/cache/index") == "cache-1.0.0\n"  # discard: the 1.0.0 image's copy


def test_out_of_band_statefulset_edit_is_reverted(e2e: E2E) -> None:
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    sts = next(s for s in e2e.rest.list("apps/v1", "statefulsets", "default")["items"]
               if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker")
    name = sts["metadata"]["name"]
    edited = e2e.kubectl("set", "image", f"statefulset/{name}", "app=gitops-kd/hello:9.9.9")
    assert edited.returncode == 0, edited.stderr

    def image() -> str:
        live = e2e.rest.get("apps/v1", "statefulsets", "default", name)
        return live["spec"]["template"]["spec"]["containers"][0]["image"]
    wait_for("the image edit reverted", lambda: image() == "gitops-kd/hello:1.0.0", 30)
    e2e.wait_settled()
    assert all(p["spec"]["containers"][0]["image"] == "gitops-kd/hello:1.0.0" for p in e2e.pods())
