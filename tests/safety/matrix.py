"""The upgrade fault matrix: upgrade, `git revert`, revert of the revert, with one fault at the k-th write or exec.

One run drives a real `gitops-kd run` process (forked from a preloaded fork server) against the embedded cluster
and a real Git repo. The fault is injected by the embedded API server on the k-th write or exec request of the
controller (matched by its bearer token; Lease renewals are not counted): a 500, a 409, a timeout (the request
hangs, then 504, not applied), a lost answer (the request is carried out, then answered 504; an exec runs, then its
connection drops before its exit status), a SIGKILL of the controller while that request hangs (a new process with
an empty cache takes over), or, with two replicas under leader election, a SIGSTOP of the leader while that request
hangs, held until the standby has taken the Lease (then SIGCONT: the deposed leader must act no more). The record
kinds act on the instance record (the GitOpsKDSource) once the controller made its k-th write or exec: its next
RECORD_WRITE_FAILURES status writes fail with 500s ("record-write"), its status is edited out of band to an older
applied commit and a force-push baseline that does not exist ("record-edit"), or it is deleted ("record-delete");
the sequence must end with the record holding the head commit again. After the sequence the invariants are
checked; a run that breaks one raises AssertionError naming it. On the real backend
(tests/real/test_fault_matrix.py) the same sequence runs with the faults injected by a FaultProxy in front of
kube-apiserver (tests/real/faultproxy.py), the controller's only way to the API server.
"""

from __future__ import annotations

import os
import resource
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gitops_kd.constants import ROLLOUT_API_VERSION
from gitops_kd.status.source import PLURAL
from gitops_kd.testing import pod_ready, wait_for
from kdsim.apiserver.faults import WRITE, FaultInjector
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.e2e.harness import E2E, git, hello_app
from tests.ha.test_failover import SYSTEM_NS, leader_of
from tests.scenarios.runs import clean_system_namespace

TOKEN = "gitops-kd-matrix"
RECORD_WRITE, RECORD_EDIT, RECORD_DELETE = "record-write", "record-edit", "record-delete"
RECORD_KINDS = (RECORD_WRITE, RECORD_EDIT, RECORD_DELETE)  # an out-of-band actor on the GitOpsKDSource after the k-th
KINDS = ("error", "conflict", "timeout", "lost", "kill", "freeze", *RECORD_KINDS)
HELD = ("kill", "freeze")  # kinds whose k-th request hangs while the controller is acted on
RECORD_WRITE_FAILURES = 3  # record-write: this many status writes of the record fail in a row (500)
RECORD_NAME = "gitops-kd"  # the GitOpsKDSource of `gitops-kd run` (named after its Lease) in SYSTEM_NS
BOGUS_SHA = "0123456789abcdef0123456789abcdef01234567"  # record-edit: a force-push baseline no repository has
HANG = 30.0  # seconds a "kill" request hangs at the server while the controller is killed
# Leader election of the freeze kind's two replicas (`gitops-kd run --lease-*`): a standby takes over a frozen leader
# about LEASE[0] s after its last renewal instead of the default 15 s; the fence is the same code at any duration.
LEASE = (6.0, 4.0, 1.0)  # lease duration, renew deadline, retry period
FREEZE_HANG = 3 * LEASE[0]  # seconds a "freeze" request hangs: the standby holds the Lease before it ends
# The test world, not the behaviour under test: a deleted pod terminates within 0.1 s (the embedded cluster caps
# grace periods at 1 s by default) and the store lives in memory (this cluster is never restarted).
POD_GRACE_CAP = 0.1
HOOK_LOG, MIGRATE_LOG = "/var/lib/gitops-kd/matrix-hook.log", "/var/lib/gitops-kd/matrix-migrate.log"
LOST_DELAY = 0.0  # seconds between carrying out a "lost" request and its 504: the controller's retry races its watch
PHASE_TIMEOUT = 150.0
SEPARATOR = "--gitops-kd-matrix-file-end--"


def matrix_app() -> str:
    """hello 2.0.0 whose hook and migration each append one line to a log on the PVC per run."""
    doc = yaml.safe_load(hello_app("2.0.0"))
    upgrade = doc["spec"]["upgrade"]
    upgrade["hooks"]["postUpgrade"]["command"] = [
        "/bin/sh",
        "-c",
        f"echo upgraded-to-2.0.0 > /var/lib/hello/upgrade.log && echo hook >> {HOOK_LOG}",
    ]
    migrate = upgrade["from"][0]["persistDirs"]["/var/lib/hello"]["migrate"]
    migrate["command"] = [
        "/bin/sh",
        "-c",
        "cp -a /var/lib/gitops-kd/old/var/lib/hello/. /var/lib/hello/ && "
        f"echo 2 > /var/lib/hello/schema-version && echo migrate >> {MIGRATE_LOG}",
    ]
    return yaml.safe_dump(doc, sort_keys=False)


@dataclass(frozen=True)
class Fault:
    """A fault of ``kind`` at the ``k``-th (1-based) write or exec of the controller; k=0: no fault."""

    kind: str
    k: int

    def __str__(self) -> str:
        return f"{self.kind}@{self.k}" if self.k else "none"


@dataclass
class Run:
    """What one run of the sequence saw: the controller's writes and execs, and the attempts started."""

    fault: Fault
    writes: int = 0
    requests: list[str] = field(default_factory=list)  # the controller's writes and execs in order (k = index + 1)
    fired: bool = False  # the fault hit a request (its rule was used up before the end)
    ready_checks: int = 0  # how many times a Ready KDRollout was checked against its pods' images
    attempts: dict[str, tuple[str, str]] = field(default_factory=dict)  # attempt id -> (direction, target)
    killed: bool = False  # a held kind acted on the controller, or a record kind on the record
    cpu: float = 0.0  # CPU seconds of this process (test, embedded cluster) and of the controllers, for the figures


@dataclass(frozen=True)
class Injection:
    """Where a run's faults are injected and its controller's writes and execs counted, and how the controller
    reaches the API server: the embedded API server by the controller's bearer token, or a FaultProxy."""

    faults: FaultInjector
    kubeconfig: Path
    writes: Callable[[], int]
    user: str = "*"  # the faults' user: the controller's token on the embedded API server
    requests: Callable[[], list[str]] | None = None  # the write and exec requests so far, where they can be listed


def controller_requests(world: E2E) -> list[str]:
    """The controller's write and exec requests so far, in order, as "verb resource[/subresource] name" (Lease
    renewals not counted)."""
    return [
        f"{e.verb} {e.resource}{'/' + e.subresource if e.subresource else ''} {e.name}"
        for e in world.cluster.access_log.entries(TOKEN)
        if e.resource != "leases"
        and (e.verb in ("create", "update", "patch", "delete", "deletecollection") or e.subresource == "exec")
    ]


def _images(world: E2E) -> set[str]:
    return {c["image"] for p in world.pods() for c in p["spec"]["containers"] if c["name"] == "app"}


def _ready_at(rollout: dict[str, Any] | None) -> str | None:
    """The version the KDRollout says it is Ready at, or None."""
    status = (rollout or {}).get("status") or {}
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ())
    return str(status.get("appVersion")) if ready else None


def _check_ready_claim(world: E2E, run: Run, rollout: dict[str, Any] | None) -> tuple[str, set[str]] | None:
    """Invariant: Ready at a version only when every pod runs that version's image, at ANY version, each time it
    is seen. The pods are listed between two reads of the KDRollout at the same resourceVersion, so the claim
    stood while they were read. Returns (the version it is Ready at, the pods' images), or None when it is not
    Ready or changed while the pods were read."""
    version = _ready_at(rollout)
    if version is None:
        return None
    images = _images(world)
    if _rv(world.rollout()) != _rv(rollout):
        return None
    run.ready_checks += 1
    assert images <= {f"gitops-kd/hello:{version}"}, f"{run.fault}: Ready at {version} while pods run {sorted(images)}"
    return version, images


def _rv(obj: dict[str, Any] | None) -> str | None:
    return ((obj or {}).get("metadata") or {}).get("resourceVersion")


def _record_attempt(status: dict[str, Any], run: Run) -> None:
    if status.get("attempt"):
        run.attempts[status["attempt"]] = (status.get("direction"), status.get("targetVersion"))


def _wait_ready(
    world: E2E,
    version: str,
    run: Run,
    procs: list[RunProcess],
    start: Any,
    faults: FaultInjector | None,
    record_fault: Callable[[], None] | None = None,
) -> None:
    """Until Ready at ``version`` (killing and replacing the controller once the injected hang fired). faults None:
    the first deploy, before any fault: it is recorded Ready at its first version as soon as the KDCluster is
    created, before its pods exist (no pod runs another image: the claim holds), so its pods are waited for after."""
    deadline = time.monotonic() + PHASE_TIMEOUT
    while time.monotonic() < deadline:
        if faults is not None and run.fault.kind in HELD and not run.killed and not faults.rules():
            run.killed = True  # the k-th request hangs at the server: act on the controller in the middle of it
            if run.fault.kind == "kill":
                procs[-1].kill()
                procs.append(start())
            else:
                _freeze_leader(world, procs)
        if record_fault is not None and not run.killed:
            record_fault()
        rollout = world.rollout()
        status = (rollout or {}).get("status") or {}
        _record_attempt(status, run)
        claim = _check_ready_claim(world, run, rollout)
        if claim is not None and claim[0] == version:
            # Invariant, at the end of a phase: the pods exist and every one runs the target's image.
            assert faults is None or claim[1] == {f"gitops-kd/hello:{version}"}, (
                f"{run.fault}: Ready at {version}, pods run {sorted(claim[1])}"
            )
            return
        if status.get("phase") == "Stalled":
            raise AssertionError(f"{run.fault}: Stalled ({status.get('stalledReason')}): {status.get('message')}")
        time.sleep(0.1)
    raise AssertionError(
        f"{run.fault}: not Ready at {version} after {PHASE_TIMEOUT}s; status {(world.rollout() or {}).get('status')}"
    )


def _freeze_leader(world: E2E, procs: list[RunProcess]) -> None:
    """SIGSTOP the leader until the standby holds the Lease, then SIGCONT it (it must then act no more)."""
    leader = wait_for("a leader", lambda: leader_of(world, procs), 30)
    os.kill(leader.proc.pid, signal.SIGSTOP)
    try:
        wait_for("the standby takes the Lease", lambda: leader_of(world, procs) not in (None, leader), 90)
    finally:
        os.kill(leader.proc.pid, signal.SIGCONT)


def record_fault(world: E2E, injection: Injection, run: Run, before: int) -> Callable[[], None]:
    """The act of a record kind, done once the controller made its k-th write or exec since ``before``."""

    def act() -> None:
        if injection.writes() - before < run.fault.k:
            return
        run.killed = True
        if run.fault.kind == RECORD_WRITE:
            injection.faults.add("error", "update", f"{PLURAL}/status", RECORD_WRITE_FAILURES, user=injection.user)
        elif run.fault.kind == RECORD_EDIT:
            older = git(world.repo, "rev-parse", "HEAD~1")
            world.rest.patch(
                ROLLOUT_API_VERSION,
                PLURAL,
                SYSTEM_NS,
                RECORD_NAME,
                {"status": {"lastAppliedRevision": older, "forcePushBaseline": BOGUS_SHA}},
                subresource="status",
            )
        else:
            world.rest.delete(ROLLOUT_API_VERSION, PLURAL, SYSTEM_NS, RECORD_NAME)

    return act


def _check_record(world: E2E, run: Run) -> None:
    """Invariant (record kinds): the record ends up holding the head commit, Ready, whatever was done to it."""
    head = git(world.repo, "rev-parse", "HEAD")

    def holds() -> bool:
        status = (world.rest.get_or_none(ROLLOUT_API_VERSION, PLURAL, SYSTEM_NS, RECORD_NAME) or {}).get("status") or {}
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or ())
        return status.get("lastAppliedRevision") == head and status.get("forcePushBaseline") == head and ready

    wait_for(f"{run.fault}: the GitOpsKDSource Ready at the head {head[:12]}", holds, 30)


def _read_files(world: E2E, pod: str, *paths: str) -> list[str]:
    """The contents of ``paths`` in ``pod``, read by one exec (each must exist)."""
    script = " && ".join(f"cat {path} && echo {SEPARATOR}" for path in paths)
    parts = world.sh(pod, script).split(f"{SEPARATOR}\n")
    assert len(parts) == len(paths) + 1 and parts[-1] == "", f"{pod}: {script}: {parts}"
    return parts[:-1]


def _poll_now(procs: list[RunProcess]) -> None:
    for proc in procs:
        if proc.alive:
            proc.poll_now()  # a standby ignores it


def run_sequence(tmp: Path, fault: Fault) -> Run:
    """Run the sequence with ``fault`` on a new embedded cluster and check every invariant; returns what it saw."""
    world = E2E(tmp, persist=False, pod_grace_cap=POD_GRACE_CAP)
    try:
        injection = Injection(
            world.cluster.faults,
            token_kubeconfig(world.cluster, tmp / "matrix.kubeconfig", TOKEN),
            lambda: len(controller_requests(world)),
            user=TOKEN,
            requests=lambda: controller_requests(world),
        )
        return sequence(world, injection, tmp, fault)
    finally:
        world.close()


def sequence(world: E2E, injection: Injection, tmp: Path, fault: Fault) -> Run:
    """The sequence with ``fault`` in ``world`` and its invariants; the controllers stopped at the end."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    run = Run(fault)
    procs: list[RunProcess] = []
    kubeconfig = injection.kubeconfig

    def start() -> RunProcess:
        if fault.kind == "freeze":
            return RunProcess(
                f"replica-{len(procs)}",
                tmp,
                kubeconfig,
                str(world.repo),
                "--namespace",
                world.ns,
                "--leader-elect",
                "--lease-duration",
                str(LEASE[0]),
                "--lease-renew-deadline",
                str(LEASE[1]),
                "--lease-retry-period",
                str(LEASE[2]),
                "--log-level",
                "info",
                env={"POD_NAMESPACE": SYSTEM_NS},
                preloaded=True,
            )
        return RunProcess(
            f"controller-{len(procs)}",
            tmp,
            kubeconfig,
            str(world.repo),
            "--namespace",
            world.ns,
            "--no-leader-elect",
            "--log-level",
            "info",
            env={"POD_NAMESPACE": SYSTEM_NS},
            preloaded=True,
        )

    try:
        clean_system_namespace(world)  # its record lives there, as deployed (POD_NAMESPACE)
        if fault.kind == "freeze":
            procs.append(start())
        procs.append(start())
        _wait_ready(world, "1.0.0", run, procs, start, None)
        wait_for("three pods Ready", lambda: len(world.pods()) == 3 and all(pod_ready(p) for p in world.pods()), 60)
        members = sorted(p["metadata"]["name"] for p in world.pods())
        for pod in members:
            world.sh(pod, "echo user-data > /var/lib/hello/user.txt")
        before = injection.writes()
        acts = record_fault(world, injection, run, before) if fault.kind in RECORD_KINDS and fault.k else None
        if fault.k and fault.kind not in RECORD_KINDS:
            kind = "timeout" if fault.kind in HELD else fault.kind
            injection.faults.add(
                kind,
                WRITE,
                "!leases",
                user=injection.user,
                skip=fault.k - 1,
                delay={"kill": HANG, "freeze": FREEZE_HANG, "lost": LOST_DELAY}.get(fault.kind, 2.0),
            )
        upgrade = world.commit({"apps/hello.yaml": matrix_app()}, "hello 2.0.0")
        _poll_now(procs)
        _wait_ready(world, "2.0.0", run, procs, start, injection.faults, acts)
        git(world.repo, "revert", "--no-edit", upgrade)
        _poll_now(procs)
        _wait_ready(world, "1.0.0", run, procs, start, injection.faults, acts)
        revert = git(world.repo, "rev-parse", "HEAD")
        git(world.repo, "revert", "--no-edit", revert)
        _poll_now(procs)
        _wait_ready(world, "2.0.0", run, procs, start, injection.faults, acts)
        if acts is not None:
            if not run.killed:
                acts()  # a k past the sequence's last phase: the act still happens, on the settled controller (once)
            _check_record(world, run)
        run.writes = injection.writes() - before
        if injection.requests is not None:
            run.requests = injection.requests()[before:]
        run.fired = bool(fault.k) and not injection.faults.rules() and (fault.kind not in RECORD_KINDS or run.killed)
        injection.faults.clear()
        # Invariant: exactly the attempts Git asked for, in order (no downgrade nobody asked for).
        assert list(run.attempts.values()) == [("upgrade", "2.0.0"), ("downgrade", "1.0.0"), ("upgrade", "2.0.0")], (
            f"{fault}: attempts {run.attempts}"
        )
        for pod in sorted(p["metadata"]["name"] for p in world.pods()):
            hook, migrate, user, schema = _read_files(
                world, pod, HOOK_LOG, MIGRATE_LOG, "/var/lib/hello/user.txt", "/var/lib/hello/schema-version"
            )
            # Invariant: each migration and hook ran exactly once per pod per upgrade attempt.
            assert hook == "hook\nhook\n", f"{fault}: {pod} hook runs"
            assert migrate == "migrate\nmigrate\n", f"{fault}: {pod} migration runs"
            # Invariant: the user's data is where the data rules say (migrated into the live dir).
            assert user == "user-data\n", f"{fault}: {pod} user data"
            assert schema == "2\n", f"{fault}: {pod} schema"
        assert sorted(p["metadata"]["name"] for p in world.pods()) == members
        return run
    finally:
        for p in procs:
            p.stop()
        end = resource.getrusage(resource.RUSAGE_SELF)
        run.cpu = end.ru_utime + end.ru_stime - usage.ru_utime - usage.ru_stime + sum(p.cpu for p in procs)
