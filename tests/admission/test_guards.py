"""Guards an out-of-band actor must not get around, end to end: deploy/ with the optional admission component, a
real `gitops-kd run` serving the webhook, real kubectl requests against the embedded cluster (issue 28, 4, 5, 8).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gitops_kd.testing import wait_for
from tests.admission.test_webhook import (
    GLASS_GROUP,
    WORKLOADS,
    _events,
    _render,
    overlay,
    serve_admission,
)
from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, NS

GLASS = "gitops-kd.io/break-glass"


@contextmanager
def guarded(tmp_path: Path) -> Iterator[tuple[E2E, RunProcess, str, list[str]]]:
    """The world at 1.0.0 behind the webhook: (world, the controller, the worker StatefulSet, member Services)."""
    docs = _render(overlay(tmp_path))
    [vwc] = [d for d in docs if d["kind"] == "ValidatingWebhookConfiguration"]
    [service] = [d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == "gitops-kd-admission"]
    world = E2E(tmp_path / "world")
    proc: RunProcess | None = None
    try:
        proc, _port = serve_admission(world, tmp_path, service, vwc)
        [sts] = [
            s["metadata"]["name"]
            for s in world.rest.list("apps/v1", "statefulsets", NS)["items"]
            if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
        ]
        members = [
            s["metadata"]["name"]
            for s in world.rest.list("v1", "services", NS)["items"]
            if (s["metadata"].get("labels") or {}).get("kubedirector.hpe.com/role")
        ]
        yield world, proc, sts, members
    finally:
        if proc is not None:
            proc.stop()
        world.close()


def test_kubedirector_labels_are_owned(tmp_path: Path) -> None:
    """Invariant (issue 28, 4): KubeDirector's labels on a managed StatefulSet are owned: removing kdcluster= is
    refused, so the webhook keeps matching and a later `kubectl set image` stays refused."""
    with guarded(tmp_path) as (world, _proc, sts, _members):
        unlabel = world.kubectl("label", "statefulset", sts, "kubedirector.hpe.com/kdcluster-")
        assert unlabel.returncode != 0
        assert (
            f'admission webhook "{WORKLOADS}" denied the request' in unlabel.stderr
            and "metadata.labels[kubedirector.hpe.com/kdcluster]" in unlabel.stderr
        ), unlabel.stderr
        assert world.kubectl("set", "image", f"statefulset/{sts}", "app=gitops-kd/hello:6.6.6").returncode != 0
        live = world.rest.get("apps/v1", "statefulsets", NS, sts)
        assert live["metadata"]["labels"]["kubedirector.hpe.com/kdcluster"] == "hello-dev"
        assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "gitops-kd/hello:1.0.0"


def test_deleting_a_statefulset_or_member_service_is_refused(tmp_path: Path) -> None:
    """Invariant (issue 28, 8): DELETE of a managed role StatefulSet (`--cascade=orphan`, the pods left running)
    or of a member Service is refused at admission; both stay."""
    with guarded(tmp_path) as (world, _proc, sts, members):
        orphan = world.kubectl("delete", "statefulset", sts, "--cascade=orphan")
        assert orphan.returncode != 0 and "deleting it is owned by gitops-kd" in orphan.stderr, orphan.stderr
        assert world.rest.get("apps/v1", "statefulsets", NS, sts)
        assert members
        gone = world.kubectl("delete", "service", members[0])
        assert gone.returncode != 0 and "deleting it is owned by gitops-kd" in gone.stderr, gone.stderr
        assert world.rest.get("v1", "services", NS, members[0])


def test_a_leftover_break_glass_annotation_is_no_standing_bypass(tmp_path: Path) -> None:
    """Invariant (issue 28, 5): a break-glass annotation left on a KDCluster lets no later DELETE through: another
    user's DELETE is refused; a break-glass group member's passes; the annotation edit and the DELETE are each
    audited by a BreakGlassEdit Event naming user and reason (and a log line)."""
    with guarded(tmp_path) as (world, proc, _sts, _members):
        assert world.kubectl("annotate", "kdcluster", "hello-dev", f"{GLASS}=old-reason").returncode == 0
        wait_for(
            "the annotation audited",
            lambda: [e for e in _events(world, "BreakGlassEdit") if "annotation 'old-reason'" in e["message"]] or None,
            20,
        )
        later = world.kubectl("--as", "mallory", "delete", "kdcluster", "hello-dev")
        assert later.returncode != 0 and "denied the request" in later.stderr, later.stderr
        assert world.rest.get("kubedirector.hpe.com/v1beta1", "kubedirectorclusters", NS, "hello-dev")
        glass = world.kubectl("--as", "alice", "--as-group", GLASS_GROUP, "delete", "kdcluster", "hello-dev", "--wait=false")
        assert glass.returncode == 0, glass.stderr
        audited = wait_for(
            "the break-glass DELETE audited",
            lambda: [e for e in _events(world, "BreakGlassEdit") if "DELETE by alice" in e["message"]] or None,
            20,
        )
        assert "group gitops-kd:break-glass" in audited[0]["message"]
        assert "DELETE by alice allowed by break-glass" in proc.log()


def test_a_break_glass_annotation_is_removed_once_audited(tmp_path: Path) -> None:
    """Invariant (issue 28, 5): a break-glass is per request, never a standing marker: the annotation set on the
    KDCluster, a role StatefulSet and a member Service is audited with its request (BreakGlassEdit) and then
    removed by the running controller, one write per object guarded by resourceVersion (BreakGlassCleared Event
    naming the reason)."""
    with guarded(tmp_path) as (world, _proc, sts, members):
        objects = [
            ("kdcluster", "kubedirector.hpe.com/v1beta1", "kubedirectorclusters", "hello-dev"),
            ("statefulset", "apps/v1", "statefulsets", sts),
            ("service", "v1", "services", members[0]),
        ]
        for kind, _api, _plural, name in objects:
            done = world.kubectl("annotate", kind, name, f"{GLASS}=INC-7-{kind}")
            assert done.returncode == 0, done.stderr
        for kind, api, plural, name in objects:
            wait_for(
                f"the annotation on {kind} {name} audited",
                lambda kind=kind: [e for e in _events(world, "BreakGlassEdit") if f"INC-7-{kind}" in e["message"]] or None,
                20,
            )
            wait_for(
                f"the annotation removed from {kind} {name}",
                lambda api=api, plural=plural, name=name: (
                    GLASS not in (world.rest.get(api, plural, NS, name)["metadata"].get("annotations") or {})
                ),
                30,
            )
            cleared = wait_for(
                f"BreakGlassCleared on {name}",
                lambda name=name: [e for e in _events(world, "BreakGlassCleared") if e["involvedObject"]["name"] == name] or None,
                20,
            )
            assert len(cleared) == 1 and f"INC-7-{kind}" in cleared[0]["message"], cleared  # one write, one Event
