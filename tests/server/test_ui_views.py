"""The web UI's views (pure): pod states through the upgrade sequence, waves, alerts, data rules, history."""

from __future__ import annotations

from typing import Any

from gitops_kd.health import cluster_health
from gitops_kd.server.ui import pages, views
from gitops_kd.status.sync import NamedSource

CTL = "kdss-controller-0"
MIGRATED = {"revision": "ctl-new", "migrationsDone": [f"2.0.0/{CTL}/migrate/var/lib/hello"]}


def controller_state(
    o: Any, pod: dict[str, Any] | None, progress: dict[str, Any] | None = None, **rollout: Any
) -> tuple[str, str]:
    ro = o.rollout(pods={CTL: progress} if progress else {}, **rollout)
    pods = [pod] if pod is not None else []
    roles = views.pod_states(ro, o.kdapp(), o.kdcluster(), [o.sts("controller", 1, "ctl-new")], pods)
    cell = roles[0]["pods"][0]
    return cell["state"], cell["detail"]


def test_a_pod_cell_shows_the_stage_the_planner_recorded(ui_objects: Any) -> None:
    """The cell reads status.pods[pod].stage (plan/pods.pod_stages decides it; the UI derives nothing): pending ->
    outdated, replacing -> recreated, the step kinds' stages, done; a pod absent or terminating is shown deleted
    at once, whatever the record still says."""
    o = ui_objects
    new = o.pod("controller", 0, "ctl-new")
    seen = [
        controller_state(o, o.pod("controller", 0, "ctl-old"), {"stage": "pending"})[0],
        controller_state(o, o.pod("controller", 0, "ctl-old", deleting=True), {"stage": "pending"})[0],
        controller_state(o, None, {"stage": "replacing"})[0],
        controller_state(o, o.pod("controller", 0, "ctl-new", ready=False), {"stage": "replacing"})[0],
        controller_state(o, new, {"revision": "ctl-new", "stage": "migrating"})[0],
        controller_state(o, new, {**MIGRATED, "stage": "hook"})[0],
        controller_state(o, new, {**MIGRATED, "hookDone": True, "stage": "waiting-gate"})[0],
        controller_state(o, new, {**MIGRATED, "hookDone": True, "gatePassed": True, "stage": "done"})[0],
    ]
    assert seen == ["outdated", "deleted", "deleted", "recreated", "migration", "hook", "gate", "done"]


def test_a_pod_without_a_recorded_stage_is_not_guessed_done(ui_objects: Any) -> None:
    """A status written before stages were recorded (or before the first record of an attempt): the pod shows as
    not yet advanced, never as done on the strength of its progress fields."""
    o = ui_objects
    state, detail = controller_state(o, o.pod("controller", 0, "ctl-new"), {**MIGRATED, "hookDone": True, "gatePassed": True})
    assert (state, detail) == ("outdated", "no stage recorded for it yet in this attempt")


def test_outside_a_rollout_a_ready_pod_is_done(ui_objects: Any) -> None:
    o = ui_objects
    assert controller_state(o, o.pod("controller", 0, "ctl-old"), phase="Idle", live="2.0.0")[0] == "done"


def test_a_downgrade_runs_no_post_steps(ui_objects: Any) -> None:
    o = ui_objects
    assert controller_state(o, o.pod("controller", 0, "ctl-new"), {"stage": "done"}, direction="downgrade")[0] == "done"


def test_stalled_names_the_pod_and_the_step_it_stopped_at(ui_objects: Any) -> None:
    o = ui_objects
    state, detail = controller_state(
        o,
        o.pod("controller", 0, "ctl-new"),
        {**MIGRATED, "stage": "hook"},
        phase="Stalled",
        stalledReason="StepFailed",
        message=f"postUpgrade hook failed in {CTL}: exit 3",
    )
    assert state == "stalled"
    assert detail == f"StepFailed at hook: postUpgrade hook failed in {CTL}: exit 3"


def test_roles_in_upgrade_order_highest_ordinal_first(ui_objects: Any) -> None:
    o = ui_objects
    roles = views.pod_states(
        o.rollout(),
        o.kdapp(),
        o.kdcluster(),
        [o.sts("worker", 2, "w-new"), o.sts("controller", 1, "ctl-new")],
        [o.pod("worker", 0, "w-old"), o.pod("worker", 1, "w-old"), o.pod("controller", 0, "ctl-old")],
    )
    assert [(r["id"], [p["name"] for p in r["pods"]]) for r in roles] == [
        ("controller", [CTL]),
        ("worker", ["kdss-worker-1", "kdss-worker-0"]),
    ]
    assert views.progress_of(roles) == (0, 3)


def test_data_rule_of_every_persisted_directory(ui_objects: Any) -> None:
    o = ui_objects
    ro = o.rollout()
    _rules, source = views.data_rules(ro, o.kdapp())
    assert source == "upgrade 1.0.0 -> 2.0.0"
    kd = o.kdcluster()
    objects = {"statefulsets": [o.sts("controller", 1, "ctl-new")], "pods": [], "services": [], "pvcs": []}
    view = views.cluster_view(cluster_health(ro, kd, **objects), ro, kd, o.kdapp(), objects, [])
    assert [(d["dir"], d["action"]) for d in view["dataRules"]["dirs"]] == [
        ("/etc", "keep"),
        ("/opt/hello/cache", "discard"),
        ("/var/lib/hello", "migrate"),
    ]


def test_a_downgrade_shows_no_step_as_passed_that_it_does_not_run(ui_objects: Any) -> None:
    """A downgrade runs no migration, hook or gate: its pods show them skipped, never green (issue 29, 9); an
    upgrade whose stanza runs them on the role skips none of them."""
    o = ui_objects
    pods = [o.pod("controller", 0, "ctl-new")]
    down = views.pod_states(
        o.rollout(direction="downgrade", target="1.0.0", live="2.0.0"),
        o.kdapp(),
        o.kdcluster(),
        [o.sts("controller", 1, "ctl-new")],
        pods,
    )
    assert down[0]["pods"][0]["skipped"] == [views.MIGRATION, views.HOOK, views.GATE]
    ro, kd = o.rollout(direction="downgrade", target="1.0.0", live="2.0.0"), o.kdcluster()
    objects = {"statefulsets": [o.sts("controller", 1, "ctl-new")], "pods": pods, "services": [], "pvcs": []}
    html = pages.cluster_fragment(views.cluster_view(cluster_health(ro, kd, **objects), ro, kd, o.kdapp(), objects, []))
    assert 'class="skipped" title="not run in this rollout">hook<' in html, html
    up = views.pod_states(o.rollout(), o.kdapp(), o.kdcluster(), [o.sts("controller", 1, "ctl-new")], pods)
    assert up[0]["pods"][0]["skipped"] == []


def test_a_stall_with_no_way_back_shows_roll_forward_not_a_revert(ui_objects: Any) -> None:
    """The cluster page advises only what will work (issue 29, 2): no `git revert` command when the failure record
    says the revert would be refused, the roll-forward advice instead, in the page and in its announcement."""
    o = ui_objects
    failure = {
        "commit": "f" * 40,
        "reason": "StepFailed",
        "policy": "halt",
        "rollback": {"possible": False, "why": "version 2.0.0 allows no downgrade to 1.0.0"},
    }
    ro, kd = o.rollout(phase="Stalled", stalledReason="StepFailed", failure=failure), o.kdcluster()
    objects = {"statefulsets": [o.sts("controller", 1, "ctl-new")], "pods": [], "services": [], "pvcs": []}
    view = views.cluster_view(cluster_health(ro, kd, **objects), ro, kd, o.kdapp(), objects, [])
    html = pages.cluster_fragment(view)
    assert 'data-field="revert"' not in html and 'data-field="roll-forward"' in html, html
    assert f"git revert {'f' * 40} would be refused" in html and "roll forward" in pages.cluster_summary(view)


def test_revert_command_only_when_stalled(ui_objects: Any) -> None:
    o = ui_objects
    assert views.revert_command(o.rollout()) is None
    assert views.revert_command(o.rollout(phase="Stalled")) == "git revert " + "c" * 40
    failed = o.rollout(phase="Stalled", failure={"commit": "f" * 40})
    assert views.revert_command(failed) == "git revert " + "f" * 40
    no_way_back = o.rollout(phase="Stalled", failure={"commit": "f" * 40, "rollback": {"possible": False}})
    assert views.revert_command(no_way_back) is None  # the page shows the stall's message (roll forward) instead


def test_fleet_groups_clusters_by_wave_and_puts_alerts_first(ui_objects: Any) -> None:
    o = ui_objects
    rows = []
    for name, wave in (("hello-prod", 1), ("hello-dev", 0), ("hello-canary", 0)):
        ro, kd = o.rollout(name, phase="Idle", live="2.0.0"), o.kdcluster(name, wave)
        rows.append((cluster_health(ro, kd), ro, kd, o.kdapp(), [], []))
    events = [
        o.event("CommitRefused", "commit abc refused, nothing applied: bad", time="2026-01-01T00:02:00Z"),
        o.event("DriftDetected", "spec.roles[0].members 1 -> 3", time="2026-01-01T00:03:00Z"),
        o.event("DriftReverted", "reverted", time="2026-01-01T00:04:00Z"),
        o.event("PodReplaced", "not an alert", type_="Normal"),
    ]
    view = views.fleet_view(rows, [o.kdapp()], events)
    (app,) = view["apps"]
    assert [(w["wave"], [c["name"] for c in w["clusters"]]) for w in app["waves"]] == [
        (0, ["hello-canary", "hello-dev"]),
        (1, ["hello-prod"]),
    ]
    assert app["desiredVersion"] == "2.0.0" and app["liveVersion"] == "2.0.0" and app["commit"] == "c" * 40
    assert view["alerts"] == []  # the drift was reverted; a refusal shows from the source's record, not its Event
    assert app["waves"][0]["clusters"][0]["sync"] == "Synced"


def test_ui_says_sync_and_alerts_as_status_does(ui_objects: Any) -> None:
    """One truth in UI and CLI (issue 29, 3): sync comes from status/sync.cluster_sync with the GitOpsKDSource
    (Refused while the branch head is refused, Suspended while held); the Alerts panel lists what is wrong now
    (the refused head, a stalled rollout, drift not yet reverted) and drops what a later commit superseded."""
    o = ui_objects
    refused = NamedSource.from_object(
        {
            "metadata": {"namespace": "gitops-kd", "name": "gitops-kd"},
            "status": {
                "lastAppliedRevision": "c" * 40,
                "lastAttemptedRevision": "d" * 40,
                "refusal": "apps/hello.yaml: spec.version",
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "CommitRefused",
                        "message": "commit dddddddddddd refused: apps/hello.yaml: spec.version",
                    }
                ],
            },
        }
    )
    idle = o.rollout("hello-dev", phase="Idle", live="2.0.0")
    held = o.rollout("hello-held", phase="Idle", live="2.0.0")
    held["spec"]["suspend"] = True
    stalled = o.rollout("hello-prod", phase="Stalled", stalledReason="GateTimeout", message="the gate did not pass")
    rows = [
        (
            cluster_health(ro, o.kdcluster(ro["metadata"]["name"], 0)),
            ro,
            o.kdcluster(ro["metadata"]["name"], 0),
            o.kdapp(),
            [],
            [],
        )
        for ro in (idle, held, stalled)
    ]
    old_refusal = o.event("CommitRefused", "commit abc refused: superseded", time="2026-01-01T00:02:00Z")
    open_drift = o.event("DriftDetected", "spec.roles[0].members 1 -> 3", time="2026-01-01T00:03:00Z")
    view = views.fleet_view(rows, [o.kdapp()], [old_refusal, open_drift], sources=[refused])
    sync = {c["name"]: c["sync"] for w in view["apps"][0]["waves"] for c in w["clusters"]}
    assert sync == {"hello-dev": "Refused", "hello-held": "Suspended", "hello-prod": "Refused"}
    assert [(a["reason"], a["object"]) for a in view["alerts"]] == [
        ("CommitRefused", "GitOpsKDSource gitops-kd/gitops-kd"),
        ("GateTimeout", "KDRollout default/hello-prod"),
        ("DriftDetected", "KubeDirectorCluster default/hello-dev"),
    ]
    assert "superseded" not in str(view["alerts"])
    quiet = views.fleet_view(rows[:1], [o.kdapp()], [old_refusal], sources=[])
    assert quiet["alerts"] == [] and quiet["apps"][0]["waves"][0]["clusters"][0]["sync"] == "Synced"


def test_history_newest_first_with_subject_and_duration(ui_objects: Any) -> None:
    o = ui_objects
    ro = o.rollout(
        phase="Idle",
        live="2.0.0",
        history=[
            {
                "version": "2.0.0",
                "fromVersion": "1.0.0",
                "commit": "a" * 40,
                "startedAt": "2026-01-01T00:00:00Z",
                "finishedAt": "2026-01-01T00:01:05Z",
                "result": "Succeeded",
            }
        ],
    )
    view = views.history_view(
        "hello", "default", [ro, o.rollout("other")], lambda sha: "hello 2.0.0" if sha == "a" * 40 else None
    )
    assert [e["cluster"] for e in view["entries"]] == ["other", "hello-dev"]  # newest first (same start: by name)
    entry = view["entries"][1]
    assert view["entries"][0]["result"] == "InProgress" and view["entries"][0]["subject"] is None
    assert entry["subject"] == "hello 2.0.0" and entry["duration"] == "1m05s" and entry["result"] == "Succeeded"
    assert view["clusters"] == 2
    recorded = o.rollout(
        phase="Idle",
        live="2.0.0",
        history=[
            {
                "version": "2.0.0",
                "fromVersion": "1.0.0",
                "commit": "b" * 40,
                "subject": "hello 2.0.0 (recorded)",
                "startedAt": "2026-01-01T00:00:00Z",
                "finishedAt": "2026-01-01T00:01:05Z",
                "result": "Succeeded",
            }
        ],
    )
    shown = views.history_view("hello", "default", [recorded], lambda _sha: None)  # not in the local clone
    assert shown["entries"][0]["subject"] == "hello 2.0.0 (recorded)"


def test_a_rebuild_shows_the_stage_the_planner_recorded(ui_objects: Any) -> None:
    """A rebuild replaces only pods running another image (plan/pods.outdated): the cells follow that record."""
    o = ui_objects
    stale = o.pod("controller", 0, "ctl-old")  # image gitops-kd/hello:x, the app asks for gitops-kd/hello:2.0.0
    assert controller_state(o, stale, {"stage": "pending"}, direction="rebuild")[0] == "outdated"
    fresh = o.pod("controller", 0, "ctl-old")
    fresh["spec"]["containers"][0]["image"] = "gitops-kd/hello:2.0.0"
    assert controller_state(o, fresh, {"stage": "done"}, direction="rebuild")[0] == "done"


def test_the_pod_count_holds_every_member_even_when_a_statefulset_is_not_listed(ui_objects: Any) -> None:
    """Invariant: the fleet summary's "N of M pods" counts every member KubeDirector's status names: a role whose
    StatefulSet the UI does not list (its cluster label removed, as `kubectl label sts ... kdcluster-` does) is
    not dropped (it said "Upgrading 1 of 1 pods" for a 3-pod cluster)."""
    from gitops_kd.server.ui import pages

    o = ui_objects
    kdcluster = o.kdcluster()
    kdcluster["status"]["roles"] = [
        {"id": "controller", "statefulSet": "kdss-controller", "members": [{"pod": CTL}]},
        {"id": "worker", "statefulSet": "kdss-worker", "members": [{"pod": "kdss-worker-0"}, {"pod": "kdss-worker-1"}]},
    ]
    rollout = o.rollout(pods={CTL: {**MIGRATED, "revision": "ctl-new", "hookDone": True, "gatePassed": True, "stage": "done"}})
    statefulsets = [o.sts("controller", 1, "ctl-new")]  # the worker StatefulSet lost its cluster label
    pods = [o.pod("controller", 0, "ctl-new"), o.pod("worker", 0, "w-old"), o.pod("worker", 1, "w-old")]
    health = cluster_health(rollout, kdcluster, statefulsets=statefulsets, pods=pods)
    view = views.fleet_view([(health, rollout, kdcluster, o.kdapp(), statefulsets, pods)], [o.kdapp()], [])
    assert pages.fleet_summary(view) == "hello-dev Upgrading 1 of 3 pods"
    roles = views.pod_states(rollout, o.kdapp(), kdcluster, statefulsets, pods[:1])  # worker pods unlisted too
    assert views.progress_of(roles) == (1, 3)
