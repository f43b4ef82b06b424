"""A standby replica that cannot judge yet answers as the webhook's failurePolicy says, then judges from the record.

A `gitops-kd run --leader-elect` replica that never leads (another holder renews the Lease) serves the webhook.
The GitOpsKDSource records an applied revision its Git cache cannot get: the replica cannot judge, and under
failurePolicy Fail it refuses the edit, naming why (a break-glass still passes, audited). Once the record names a
real commit, the same standby judges from it: the edit is refused with the Git file to change instead.
Invariant: no edit passes unjudged under Fail, and a standby judges from the cluster's record, not from leading.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gitops_kd.testing import wait_for
from tests.admission.test_webhook import (
    GLASS_GROUP,
    VWC,
    WORKLOADS,
    _events,
    _render,
    admission_port,
    endpoints,
    install,
    overlay,
)
from tests.deploy.runner import RunProcess
from tests.deploy.test_rbac import SYSTEM_NS
from tests.e2e.harness import E2E, NS, git

SOURCE = "gitops-kd.io/v1alpha1", "gitopskdsources"
UNKNOWN = "0123456789abcdef" * 2 + "01234567"  # a sha no branch of the repository has
STS = "kdss-hand"


def _record(world: E2E, revision: str) -> None:
    """The instance record as a leader writes it: the repository, branch and applied revision (status)."""
    obj = world.rest.get_or_none(*SOURCE, SYSTEM_NS, "gitops-kd")
    if obj is None:
        obj = world.rest.create(
            *SOURCE,
            SYSTEM_NS,
            {
                "apiVersion": SOURCE[0],
                "kind": "GitOpsKDSource",
                "metadata": {"name": "gitops-kd", "namespace": SYSTEM_NS},
                "spec": {},
            },
        )
    obj["status"] = {"url": str(world.repo.resolve()), "branch": "main", "lastAppliedRevision": revision}
    world.rest.replace(*SOURCE, SYSTEM_NS, "gitops-kd", obj, subresource="status")


def _lease_held_elsewhere(world: E2E) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    world.rest.create(
        "coordination.k8s.io/v1",
        "leases",
        SYSTEM_NS,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "gitops-kd", "namespace": SYSTEM_NS},
            "spec": {
                "holderIdentity": "a-leader-elsewhere",
                "leaseDurationSeconds": 3600,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        },
    )


def _statefulset() -> dict[str, Any]:
    """A role StatefulSet of the cluster Git declares (hello-dev, role worker), as KubeDirector labels it."""
    labels = {"kubedirector.hpe.com/kdcluster": "hello-dev", "kubedirector.hpe.com/role": "worker"}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": STS, "namespace": NS, "labels": labels},
        "spec": {
            "replicas": 0,
            "serviceName": STS,
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "OnDelete"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "gitops-kd/hello:1.0.0"}]},
            },
        },
    }


def test_a_standby_that_cannot_judge_refuses_under_fail_then_judges_from_the_recorded_revision(tmp_path: Path) -> None:
    docs = _render(overlay(tmp_path))
    [vwc] = [d for d in docs if d["kind"] == "ValidatingWebhookConfiguration"]
    [service] = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "gitops-kd-admission"]
    for hook in vwc["webhooks"]:
        hook["failurePolicy"] = "Fail" if hook["name"] == WORKLOADS else "Ignore"
    world = E2E(tmp_path / "world")
    proc: RunProcess | None = None
    try:
        kubeconfig = install(world, tmp_path, service, vwc, _statefulset())
        _lease_held_elsewhere(world)
        _record(world, UNKNOWN)
        proc = RunProcess(
            "standby",
            tmp_path,
            kubeconfig,
            str(world.repo),
            "--namespace",
            NS,
            "--leader-elect",
            "--admission-listen",
            "127.0.0.1:0",
            "--break-glass-group",
            GLASS_GROUP,
            env={"POD_NAMESPACE": SYSTEM_NS},
        )
        running = proc
        endpoints(world, admission_port(proc))
        wait_for(
            "the caBundle filled in",
            lambda: all(w["clientConfig"].get("caBundle") for w in world.rest.get(*VWC, None, "gitops-kd")["webhooks"]),
            30,
        )
        wait_for(
            "the recorded revision failing to load",
            lambda: f"cannot load the applied revision {UNKNOWN[:12]}" in running.log(),
            60,
        )

        def image() -> str:
            return str(world.rest.get("apps/v1", "statefulsets", NS, STS)["spec"]["template"]["spec"]["containers"][0]["image"])

        edit = ("set", "image", f"statefulset/{STS}", "app=gitops-kd/hello:6.6.6")

        # 1. not judged, failurePolicy Fail: refused, naming why
        refused = world.kubectl(*edit)
        assert refused.returncode != 0
        assert (
            f'admission webhook "{WORKLOADS}" denied the request: gitops-kd cannot judge this edit of StatefulSet '
            f"{NS}/{STS} now: the applied revision {UNKNOWN[:12]} (GitOpsKDSource {SYSTEM_NS}/gitops-kd) is not "
            "loaded yet: "
        ) in refused.stderr
        assert (
            "The webhook's failurePolicy is Fail, so it is refused as if gitops-kd were unreachable; retry in "
            "a moment, or break-glass (audited)"
        ) in refused.stderr
        assert image() == "gitops-kd/hello:1.0.0"
        assert "not judged, refused" in proc.log()
        # 2. a break-glass passes, audited
        glass = world.kubectl("--as", "alice", "--as-group", GLASS_GROUP, *edit)
        assert glass.returncode == 0, glass.stderr
        audited = wait_for("a BreakGlassEdit event", lambda: _events(world, "BreakGlassEdit") or None, 20)
        assert f"not judged (the applied revision {UNKNOWN[:12]}" in audited[0]["message"]
        assert image() == "gitops-kd/hello:6.6.6"
        assert (
            world.kubectl(
                "--as", "alice", "--as-group", GLASS_GROUP, "set", "image", f"statefulset/{STS}", "app=gitops-kd/hello:1.0.0"
            ).returncode
            == 0
        )

        # 3. the record names the real head: the standby (still not leading) judges from it
        head = git(world.repo, "rev-parse", "HEAD")
        _record(world, head)
        wait_for("the standby judging from the head", lambda: f"judging from revision {head[:12]}" in running.log(), 60)
        judged = world.kubectl(*edit)
        assert judged.returncode != 0
        assert (
            f'admission webhook "{WORKLOADS}" denied the request: StatefulSet {NS}/{STS} is managed by gitops-kd '
            "from Git: spec.template.spec.containers[app].image is owned by gitops-kd; change apps/hello.yaml or "
            "clusters/hello-dev.yaml in Git instead"
        ) in judged.stderr
        assert image() == "gitops-kd/hello:1.0.0"
        lease = world.rest.get("coordination.k8s.io/v1", "leases", SYSTEM_NS, "gitops-kd")
        assert lease["spec"]["holderIdentity"] == "a-leader-elsewhere"
        assert "leads: starting the controller" not in proc.log()
        assert proc.stop() == 0, proc.log()[-3000:]
    finally:
        if proc is not None:
            proc.stop()
        world.close()
