"""Live upgrades stay correct when a write fails, across up/down/up cycles, on same-version image changes and
with long hook commands.

Each test names the invariant it checks. They run the real controller against the embedded cluster with its
fault injection and a real Git repo (tests/e2e/harness.py).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gitops_kd.cli import main
from kdsim.images import ImageBehavior
from kdsim.images import store_for as images_of
from tests.e2e.harness import E2E, HELLO_2, PodWatch, git, wait_for
from tests.e2e.test_upgrade_steps import start_with_exec
from tests.safety.matrix import HOOK_LOG, MIGRATE_LOG, matrix_app
from tests.safety.sampler import Sample, Sampler

NS = "default"


def images(e2e: E2E) -> dict[str, str]:
    """Pod name -> image of its app container."""
    return Sample({}, e2e.pods()).images()


def reasons(e2e: E2E) -> list[str]:
    """Each Event's reason, as many times as it happened (a repeat is counted on the first Event, as client-go does)."""
    return [e.get("reason", "") for e in e2e.rest.list("v1", "events", NS)["items"] for _ in range(e.get("count") or 1)]


@pytest.mark.parametrize("kind", ["error", "conflict", "timeout"])  # 500, 409, hang then 504 (kdsim faults)
def test_failed_status_write_at_rollout_start_never_reports_ready_on_old_pods(e2e: E2E, kind: str) -> None:
    """Invariant: when the status write that starts the rollout fails (500, 409 or a timeout), the KDRollout is
    never Ready nor adopted at 2.0.0 while a pod runs another image (sampled throughout), every pod is replaced,
    and the migration and the hook run exactly once per pod."""
    start_with_exec(e2e)
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in e2e.pods()}

    def never_ready_on_old_pods(s: Sample) -> str | None:
        claimed = s.ready or s.status.get("direction") == "adopt"
        on_target = len(s.pods) == 3 and set(s.images().values()) == {"gitops-kd/hello:2.0.0"}
        return (
            "Ready or adopted at 2.0.0 while pods run another image"
            if claimed and s.status.get("appVersion") == "2.0.0" and not on_target
            else None
        )

    sampler = Sampler(e2e, never_ready_on_old_pods)
    e2e.cluster.faults.add(kind, verb="patch", resource="kdrollouts/status", delay=2.0)
    e2e.commit({"apps/hello.yaml": matrix_app()}, "hello 2.0.0")
    try:
        ro = e2e.wait_ready_at("2.0.0", timeout=120)
    finally:
        violations = sampler.stop()
    assert e2e.cluster.faults.rules() == [], "the fault was never injected"
    assert violations == []
    assert ro["status"]["direction"] == "upgrade"
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in e2e.pods()}
    assert after.keys() == before.keys() and all(after[n] != before[n] for n in before), "a pod was not replaced"
    assert set(images(e2e).values()) == {"gitops-kd/hello:2.0.0"}
    for pod in sorted(after):
        assert e2e.sh(pod, f"cat {HOOK_LOG}") == "hook\n", f"{pod}: hook runs"
        assert e2e.sh(pod, f"cat {MIGRATE_LOG}") == "migrate\n", f"{pod}: migration runs"


def test_revert_of_the_revert_runs_migration_and_hook_again_and_keeps_user_data(e2e: E2E) -> None:
    """Invariant: every upgrade attempt runs its migrations and hook once per pod, however many up/down cycles
    came before, and the user's data stays in place (not only under .gitops-kd/old)."""
    roles = start_with_exec(e2e)
    everyone = roles["controller"] + roles["worker"]
    for pod in everyone:
        e2e.sh(pod, "echo user-data > /var/lib/hello/user.txt")
    upgrade = e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    e2e.wait_ready_at("2.0.0", timeout=120)
    git(e2e.repo, "revert", "--no-edit", upgrade)
    e2e.controller.trigger_poll()
    e2e.wait_ready_at("1.0.0", timeout=120)
    revert = git(e2e.repo, "rev-parse", "HEAD")
    git(e2e.repo, "revert", "--no-edit", revert)
    e2e.controller.trigger_poll()
    ro = e2e.wait_ready_at("2.0.0", timeout=150)
    assert ro["status"]["direction"] == "upgrade"
    for pod in everyone:
        assert e2e.sh(pod, "cat /var/lib/hello/user.txt") == "user-data\n"
        assert e2e.sh(pod, "cat /var/lib/hello/schema-version") == "2\n"
        assert e2e.sh(pod, "cat /var/lib/hello/upgrade.log") == "upgraded-to-2.0.0\n"
    seen = reasons(e2e)
    assert seen.count("HookSucceeded") == 6 and seen.count("MigrationSucceeded") == 6


def rebuilt_app(version: str, image: str) -> str:
    """matrix_app() (hello 2.0.0, its hook and migration logging each run) at `version` on `image`."""
    doc = yaml.safe_load(matrix_app())
    doc["spec"]["version"], doc["spec"]["defaultImageRepoTag"] = version, image
    return yaml.safe_dump(doc, sort_keys=False)


def plan_output(e2e: E2E) -> str:
    """`gitops-kd plan` of the repo's head against the cluster (read only)."""
    shown = CliRunner().invoke(main, ["plan", "--repo", str(e2e.repo), "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert shown.exit_code == 0, shown.output
    return shown.output


@pytest.mark.parametrize("version", ["2.0.0", "2.0.0+build.2"])
def test_same_version_image_change_replaces_every_pod_one_at_a_time(e2e: E2E, version: str) -> None:
    """Invariant: a new image under the same version (2.0.0, or 2.0.0+build.2: +build metadata is the same
    version) is a rebuild (docs/upgrade-stanza.md): every pod replaced one at a time (never two members down),
    the KDRollout Upgrading (direction rebuild) and never Ready while pods run mixed images, `gitops-kd plan`
    never "in sync" before the last pod runs the new image, and no migration nor hook runs."""
    start_with_exec(e2e)
    e2e.commit({"apps/hello.yaml": matrix_app()}, "hello 2.0.0")
    e2e.wait_ready_at("2.0.0", timeout=120)
    e2e.wait_settled()
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in e2e.pods()}
    steps = reasons(e2e).count("HookSucceeded"), reasons(e2e).count("MigrationSucceeded")
    assert steps == (3, 3)
    image = "gitops-kd/hello:2.0.0-r2"  # slow to get Ready, so that `plan` runs while the pods are mixed
    images_of(e2e.cluster).add(image, HELLO_2, behavior=ImageBehavior(ready_delay_seconds=1.0))
    phases: set[tuple[str, str]] = set()

    def never_ready_while_mixed(s: Sample) -> str | None:
        phases.add((s.status.get("phase", ""), s.status.get("direction", "")))
        whole = len(s.pods) == 3 and s.serving() == 3 and len(set(s.images().values())) == 1
        return "Ready while pods are mixed or down" if s.ready and not whole else None

    sampler = Sampler(e2e, never_ready_while_mixed)
    watch = PodWatch(e2e.rest, "hello-dev", expected=3)
    e2e.commit({"apps/hello.yaml": rebuilt_app(version, image)}, f"hello {version} rebuilt")

    def rebuilt() -> bool:
        s = Sample((e2e.rollout() or {}).get("status") or {}, e2e.pods())
        return s.ready and set(s.images().values()) == {image} and s.serving() == 3

    # (plan output, pod images and whether the commit was rolled out, both read just after the plan)
    plans: list[tuple[str, set[str], bool]] = []
    try:
        while not plans or not plans[-1][2]:
            output = plan_output(e2e)
            plans.append((output, set(images(e2e).values()), rebuilt()))
            assert len(plans) < 120, "not rebuilt after 120 plans"
    finally:
        violations = sampler.stop()
        watch.stop()
    assert violations == []
    assert watch.max_down == 1 and sorted(n for n, _r, _t in watch.deleted) == sorted(before)
    early = [(n, p) for n, (p, _i, done) in enumerate(plans) if says_no_action(p) and not done]
    assert early == [], f"plan said in sync before the commit was rolled out ({len(plans)} plans)"
    assert any(len(i) > 1 for _p, i, _d in plans), "no plan ran while the pods were mixed"
    assert ("Upgrading", "rebuild") in phases, phases
    ro = e2e.wait_ready_at(version, timeout=30)  # the version as Git writes it
    assert ro["status"]["phase"] == "Idle" and ro["status"]["direction"] == "rebuild"
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in e2e.pods()}
    assert after.keys() == before.keys() and all(after[n] != before[n] for n in before)
    assert (reasons(e2e).count("HookSucceeded"), reasons(e2e).count("MigrationSucceeded")) == steps
    for pod in sorted(after):  # the logs on the PVC: one run each, from the upgrade to 2.0.0
        assert e2e.sh(pod, f"cat {HOOK_LOG} {MIGRATE_LOG}") == "hook\nmigrate\n", f"{pod}: steps ran again"
    e2e.wait_settled()
    assert says_no_action(plan_output(e2e))


def says_no_action(plan: str) -> bool:
    """`gitops-kd plan` says nothing is left to do: in sync, or (stock KubeDirector holding the KDApp in use) no
    action now, with the held changes listed below it."""
    return "in sync: nothing to do" in plan or "no action now: the changes below are held" in plan


def test_build_metadata_alone_replaces_no_pod(e2e: E2E) -> None:
    """Invariant (docs/upgrade-stanza.md): `+build` metadata alone (2.0.0 -> 2.0.0+build.2, same image) is the
    same version on the same image: no pod is replaced or down, no migration nor hook runs, the KDRollout is
    Ready at the version as Git writes it and `gitops-kd plan` says in sync."""
    start_with_exec(e2e)
    e2e.commit({"apps/hello.yaml": matrix_app()}, "hello 2.0.0")
    e2e.wait_ready_at("2.0.0", timeout=120)
    e2e.wait_settled()
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in e2e.pods()}
    watch = PodWatch(e2e.rest, "hello-dev", expected=3)
    try:
        e2e.commit({"apps/hello.yaml": rebuilt_app("2.0.0+build.2", "gitops-kd/hello:2.0.0")}, "hello 2.0.0+build.2")
        e2e.wait_ready_at("2.0.0+build.2", timeout=60)
        e2e.wait_settled()
    finally:
        watch.stop()
    assert watch.deleted == [] and watch.max_down == 0
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in e2e.pods()} == before
    for pod in sorted(before):
        assert e2e.sh(pod, f"cat {HOOK_LOG} {MIGRATE_LOG}") == "hook\nmigrate\n", f"{pod}: steps ran again"
    assert says_no_action(plan_output(e2e))


def test_exec_the_api_server_keeps_refusing_stalls_with_a_reason_and_status_exits_1(e2e: E2E) -> None:
    """Invariant: a failure that repeats becomes a Stall with a named reason (ExecFailed), a Warning event and a
    non-zero `gitops-kd status`, instead of a retry every 2 s forever."""
    start_with_exec(e2e)
    e2e.cluster.faults.add("error", verb="*", resource="pods/exec", count=10_000, message="exec refused")
    e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")

    def stalled() -> dict[str, Any] | None:
        status = (e2e.rollout() or {}).get("status") or {}
        return status if status.get("stalledReason") == "ExecFailed" else None

    status = wait_for("the rollout stalled with ExecFailed", stalled, 120)
    assert "could not be started or gave no answer 5 times in a row" in status["message"] and "exec refused" in status["message"]

    def stalled_warnings() -> list[dict[str, Any]]:  # written just after the status
        return [
            e
            for e in e2e.rest.list("v1", "events", NS)["items"]
            if e.get("reason") == "UpgradeStalled" and e.get("type") == "Warning"
        ]

    warnings = wait_for("the UpgradeStalled Warning event", stalled_warnings, 30)
    assert "ExecFailed" in warnings[0]["message"]
    e2e.cluster.faults.clear()
    shown = CliRunner().invoke(main, ["status", "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert shown.exit_code == 1, shown.output
    assert "ExecFailed" in shown.output or "exec" in shown.output.lower()


def test_hook_with_a_10_kb_command_runs_once_per_pod(e2e: E2E) -> None:
    """Invariant: a postUpgrade hook whose command is about 10 KB runs, exactly once per pod, and the upgrade
    finishes Ready. kube-apiserver and the kubelet accept a request head (the exec URL carries the command) of
    up to 1 MiB (Go's http.Server MaxHeaderBytes 1 << 20), so the embedded cluster must not refuse it either
    (before kdsim/httplimits.py it answered 400 beyond 8190 bytes: Stalled ExecFailed on a hook a real cluster runs)."""
    start_with_exec(e2e)
    doc = yaml.safe_load(matrix_app())
    hook = doc["spec"]["upgrade"]["hooks"]["postUpgrade"]
    padding = ": " + "x" * 10_000 + " && "  # a no-op of 10 KB in front of the hook's own command
    hook["command"] = [hook["command"][0], hook["command"][1], padding + hook["command"][2]]
    assert len(" ".join(hook["command"])) > 10_000
    e2e.commit({"apps/hello.yaml": yaml.safe_dump(doc, sort_keys=False)}, "hello 2.0.0, a long hook")
    ro = e2e.wait_ready_at("2.0.0", timeout=120)
    assert ro["status"]["direction"] == "upgrade"
    assert set(images(e2e).values()) == {"gitops-kd/hello:2.0.0"}
    for pod in sorted(p["metadata"]["name"] for p in e2e.pods()):
        assert e2e.sh(pod, f"cat {HOOK_LOG} {MIGRATE_LOG}") == "hook\nmigrate\n", f"{pod}: steps run"
        assert e2e.sh(pod, "cat /var/lib/hello/upgrade.log") == "upgraded-to-2.0.0\n"
    assert "ExecFailed" not in str(ro["status"]) and reasons(e2e).count("HookSucceeded") == 3
    shown = CliRunner().invoke(main, ["status", "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert shown.exit_code == 0, shown.output
