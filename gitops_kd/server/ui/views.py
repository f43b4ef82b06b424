"""What the web UI shows, as plain JSON-ready dicts built from already-read objects (pure: no I/O).

- ``fleet_view``: apps, their clusters grouped by wave with sync, health, phase and pods done / total,
  and the alerts (CommitRefused and DriftDetected Warning events) that go at the top.
- ``cluster_view``: one cluster's roles in upgrade order, each pod's state in the upgrade sequence
  (``pod_states``), the data rule of every persisted directory, Service ports, recent Events and the
  `git revert` to run when the rollout is stalled.
- ``history_view``: every version applied to the clusters of one app (gitops_kd.history), with the
  commit subject when the caller can look it up.

Pod states, in the order a pod goes through them during an upgrade (see gitops_kd/plan/pods.py):
outdated (still at the old template) -> deleted (terminating or absent) -> recreated (new revision, not
Ready yet) -> migration -> hook -> gate (post-upgrade steps, upgrades only) -> done; or stalled (the
rollout stopped on this pod, with the reason). Outside a rollout a Ready pod is done.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from gitops_kd.constants import ACTIVE_PHASES, UPGRADE_ANNOTATION, WAVE_LABEL, Phase
from gitops_kd.diff.rollback import Rollback
from gitops_kd.drift.alert import DRIFT_DETECTED
from gitops_kd.health import ClusterHealth
from gitops_kd.history.entries import HistoryEntry, entries_of, sort_key
from gitops_kd.kd import layout
from gitops_kd.plan.waves import parse_time
from gitops_kd.render.template import dir_actions
from gitops_kd.rollout.model import Failure, RolloutStatus, Stage, status_key
from gitops_kd.spec.loader import load_manifests
from gitops_kd.spec.model import KDApp
from gitops_kd.spec.upgrade import MIGRATE, PersistRules, UpgradeSpec, order_roles
from gitops_kd.status.sync import NamedSource, cluster_sync, source_for
from kubeplumb.names import POD_NAME_LABEL

Obj = Mapping[str, Any]

OUTDATED, DELETED, RECREATED, MIGRATION, HOOK, GATE, DONE, STALLED = (
    "outdated",
    "deleted",
    "recreated",
    "migration",
    "hook",
    "gate",
    "done",
    "stalled",
)
SEQUENCE = (OUTDATED, DELETED, RECREATED, MIGRATION, HOOK, GATE, DONE)
DRIFT_CLOSED = ("DriftReverted", "DriftResolved")
_SHOWN: dict[str, str] = {
    Stage.PENDING: OUTDATED,
    Stage.REPLACING: RECREATED,
    Stage.MIGRATING: MIGRATION,
    Stage.HOOK: HOOK,
    Stage.WAITING_GATE: GATE,
    Stage.DONE: DONE,
}  # the planner's recorded stage -> the cell's state
STATE_TEXT = {
    OUTDATED: "outdated: runs the old template",
    DELETED: "deleted: being replaced",
    RECREATED: "recreated: new revision, waiting for Ready",
    MIGRATION: "migration: running the data migration",
    HOOK: "hook: running the post-upgrade hook",
    GATE: "gate: waiting for the upgrade gate",
    DONE: "done",
    STALLED: "stalled",
}


def _meta(obj: Obj | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def _spec(obj: Obj | None) -> Mapping[str, Any]:
    return (obj or {}).get("spec") or {}


def _status(obj: Obj | None) -> Mapping[str, Any]:
    return (obj or {}).get("status") or {}


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _rollout_status(rollout: Obj | None) -> RolloutStatus:
    return RolloutStatus.from_obj(_status(rollout))


def wave_of(kdcluster: Obj | None) -> int:
    """The gitops-kd.io/wave label (or annotation) of a KDCluster; 0 when absent or not a number."""
    meta = _meta(kdcluster)
    raw = (meta.get("labels") or {}).get(WAVE_LABEL, (meta.get("annotations") or {}).get(WAVE_LABEL, 0))
    try:
        return int(raw)
    except (TypeError, ValueError):
        return 0


def stanza_of(kdapp: Obj | None) -> UpgradeSpec | None:
    """The upgrade stanza the live KDApp carries (annotation gitops-kd.io/upgrade), or None."""
    text = (_meta(kdapp).get("annotations") or {}).get(UPGRADE_ANNOTATION)
    if not text:
        return None
    try:
        return UpgradeSpec.from_annotation(str(text))
    except Exception:  # noqa: BLE001 - a hand-edited annotation: show no rules rather than fail the page
        return None


def _from_stanza(rollout: Obj | None, field: str = "from_stanza") -> UpgradeSpec | None:
    """The upgrade stanza the KDRollout records in the RolloutStatus field ``field`` (None: absent or unreadable)."""
    text = getattr(RolloutStatus.from_obj(_status(rollout)), field)
    if not text:
        return None
    try:
        return UpgradeSpec.from_annotation(str(text), f"KDRollout status.{status_key(field)}")
    except Exception:  # noqa: BLE001
        return None


def target_stanza(rollout: Obj | None, kdapp: Obj | None) -> UpgradeSpec | None:
    """The stanza of the attempt's target: the KDRollout's record (status.targetStanza; stock KubeDirector holds the
    KDApp clusters use at its old spec), else the live KDApp's."""
    found = _from_stanza(rollout, "target_stanza")
    return found if found is not None else stanza_of(kdapp)


def role_ids(kdapp: Obj | None, kdcluster: Obj | None) -> list[str]:
    """Role ids in the app's spec order (the cluster's roles when the app is unknown)."""
    ids = [_text(r.get("id")) for r in _spec(kdapp).get("roles") or () if r.get("id")]
    return ids or [_text(r.get("id")) for r in _spec(kdcluster).get("roles") or () if r.get("id")]


def app_model(kdapp: Obj | None) -> KDApp | None:
    """The live KDApp read back through the spec model (as Git's would be), or None when it does not load."""
    if not kdapp:
        return None
    meta = _meta(kdapp)
    doc = {
        "apiVersion": kdapp.get("apiVersion", layout.API_VERSION),
        "kind": kdapp.get("kind", layout.KDAPP_KIND),
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "spec": dict(_spec(kdapp)),
    }
    try:
        found = load_manifests(f"live KubeDirectorApp {meta.get('namespace')}/{meta.get('name')}", json.dumps(doc).encode())
    except Exception:  # noqa: BLE001 - a live object the spec model refuses: the caller falls back
        return None
    return next((o for o in found if isinstance(o, KDApp)), None)


def persisted_dirs(kdapp: Obj | None, role_id: str, model: KDApp | None = None) -> tuple[str, ...]:
    """The directories a role persists (KubeDirector's rule, through the spec model); without a model,
    the role's persistDirs or the app's defaultPersistDirs as written."""
    model = model if model is not None else app_model(kdapp)
    if model is not None:
        try:
            return model.role(role_id).effective_persist_dirs
        except Exception:  # noqa: BLE001 - a role the app does not have
            return ()
    spec = _spec(kdapp)
    role: Mapping[str, Any] = next((r for r in spec.get("roles") or () if r.get("id") == role_id), {})
    own = role.get("persistDirs")
    return tuple(str(d) for d in (own if own is not None else spec.get("defaultPersistDirs") or ()))


def data_rules(rollout: Obj | None, kdapp: Obj | None) -> tuple[PersistRules | None, str]:
    """The data rules of the current (or last) attempt and where they come from."""
    status = _rollout_status(rollout)
    direction, source = _text(status.direction), _text(status.from_version)
    target = _text(status.target_version or _spec(rollout).get("targetVersion"))
    try:
        if direction == "upgrade" and source:
            stanza = target_stanza(rollout, kdapp)
            if stanza is not None:
                return stanza.rule_for_upgrade_from(source), f"upgrade {source} -> {target}"
        if direction == "downgrade" and target:
            stanza = _from_stanza(rollout)
            if stanza is not None:
                return stanza.rule_for_downgrade_to(target), f"downgrade {source} -> {target}"
    except Exception:  # noqa: BLE001 - a version that does not parse: no rules
        return None, "no upgrade rules (the versions do not parse)"
    return None, "no upgrade rules (data kept)"


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in _status(pod).get("conditions") or ())


def _ordinal(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _labels(obj: Obj) -> Mapping[str, Any]:
    return _meta(obj).get("labels") or {}


def pod_states(
    rollout: Obj | None, kdapp: Obj | None, kdcluster: Obj | None, statefulsets: Sequence[Obj], pods: Sequence[Obj]
) -> list[dict[str, Any]]:
    """One entry per role in upgrade order: its StatefulSet and its pods (highest ordinal first, the order
    they are replaced in), each with its state in the upgrade sequence and a human detail."""
    status = _status(rollout)
    recorded_status = RolloutStatus.from_obj(status)
    phase = _text(recorded_status.phase)
    active = phase in ACTIVE_PHASES
    direction = _text(recorded_status.direction)
    stanza = target_stanza(rollout, kdapp) if direction == "upgrade" else None
    rules, _source = data_rules(rollout, kdapp)
    sts_by_role = {_text(_labels(s).get(layout.ROLE_LABEL)): s for s in statefulsets}
    pods_by_name = {_text(_meta(p).get("name")): p for p in pods}
    ids = role_ids(kdapp, kdcluster)
    ids += [r for r in sorted(sts_by_role) if r and r not in ids]
    declared = stanza if stanza is not None else target_stanza(rollout, kdapp)
    order = order_roles(declared.role_order if declared is not None else (), ids)
    model = app_model(kdapp)
    roles: list[dict[str, Any]] = []
    members_by_role = _members_by_role(kdcluster)
    for role_id in order:
        sts = sts_by_role.get(role_id)
        status_sts, members = members_by_role.get(role_id, ("", []))
        labelled = {n for n, p in pods_by_name.items() if _labels(p).get(layout.ROLE_LABEL) == role_id}
        if sts is None and not (members or labelled):
            continue
        # a StatefulSet not listed (its cluster label removed, or not readable) still has the members
        # KubeDirector's status names: they are counted, never dropped from the total
        sts_name = _text(_meta(sts).get("name")) if sts is not None else status_sts
        update_revision = _text(_status(sts).get("updateRevision")) if sts is not None else ""
        replicas = int(_spec(sts).get("replicas") or 0) if sts is not None else len(members)
        names = {f"{sts_name}-{i}" for i in range(replicas)} if sts is not None else set(members)
        names |= labelled | set(members)
        migrate_dirs = (
            [d for d, a in dir_actions(persisted_dirs(kdapp, role_id, model), rules) if a == MIGRATE]
            if direction == "upgrade"
            else []
        )
        skipped = steps_not_run(direction, stanza, role_id, migrate_dirs)
        cells = []
        for name in sorted(names, key=_ordinal, reverse=True):
            pod = pods_by_name.get(name)
            recorded = recorded_status.stage(name)
            state, detail = _pod_state(pod, str(recorded) if recorded else None, active=active)
            cells.append(
                {
                    "name": name,
                    "ordinal": _ordinal(name),
                    "state": state,
                    "stage": state,
                    "recordedStage": str(recorded) if recorded else None,
                    "detail": detail,
                    "revision": _text(_labels(pod or {}).get(layout.REVISION_LABEL)) or None,
                    "ready": bool(pod is not None and _ready(pod)),
                    "image": _image(pod),
                    "skipped": list(skipped),
                }
            )
        roles.append(
            {
                "id": role_id,
                "statefulSet": sts_name,
                "updateRevision": update_revision or None,
                "replicas": replicas,
                "pods": cells,
            }
        )
    if phase == Phase.STALLED:
        _mark_stalled(roles, status)
    return roles


def steps_not_run(direction: str, stanza: UpgradeSpec | None, role_id: str, migrate_dirs: Sequence[str]) -> tuple[str, ...]:
    """The steps of SEQUENCE a pod of ``role_id`` does not go through in this attempt: migrations without a dir
    to migrate, the hook and the gate unless the upgrade's stanza runs them on the role (a downgrade, rebuild or
    adoption runs none), so the UI never shows them as passed."""
    live = stanza if direction == "upgrade" else None
    runs = {
        MIGRATION: bool(migrate_dirs),
        HOOK: live is not None and live.post_upgrade is not None and live.post_upgrade.applies_to(role_id),
        GATE: live is not None and live.gate is not None and live.gate.applies_to(role_id),
    }
    return tuple(step for step, ran in runs.items() if not ran)


def _members_by_role(kdcluster: Obj | None) -> dict[str, tuple[str, list[str]]]:
    """role id -> (its StatefulSet, its member pods) as KubeDirector's status of the KDCluster names them."""
    out: dict[str, tuple[str, list[str]]] = {}
    for role in _status(kdcluster).get("roles") or ():
        pods = [_text(m.get("pod")) for m in role.get("members") or () if m.get("pod")]
        out[_text(role.get("id"))] = (_text(role.get("statefulSet")), pods)
    return out


def _image(pod: Obj | None) -> str | None:
    for c in _spec(pod).get("containers") or ():
        if c.get("name") == layout.APP_CONTAINER:
            return _text(c.get("image")) or None
    return None


def _pod_state(pod: Obj | None, recorded: str | None, *, active: bool) -> tuple[str, str]:
    """A pod's cell: the stage the planner recorded for it (status.pods[pod].stage, plan/pods.pod_stages) shown
    with what the pod is now (absent or terminating shows as deleted at once; the record follows within a
    reconcile). Outside an attempt a pod is done when Ready."""
    if pod is None:
        return DELETED, "absent: the StatefulSet recreates it"
    if _meta(pod).get("deletionTimestamp"):
        return DELETED, "terminating"
    revision = _text(_labels(pod).get(layout.REVISION_LABEL)) or "?"
    if not active:
        return (DONE, "Ready") if _ready(pod) else (RECREATED, "not Ready")
    if recorded is None:
        return OUTDATED, "no stage recorded for it yet in this attempt"
    shown = _SHOWN.get(recorded, OUTDATED)
    return shown, f"revision {revision}: {STATE_TEXT[shown]}" if shown != DONE else f"Ready at revision {revision}, steps done"


def _mark_stalled(roles: list[dict[str, Any]], status: Mapping[str, Any]) -> None:
    """The pod the stalled rollout stopped on: RolloutStatus.current_pod, else the pod its message names, else the
    first pod (in upgrade order) that is neither done nor outdated, else the first outdated one."""
    cells = [c for r in roles for c in r["pods"]]
    recorded = RolloutStatus.from_obj(status)
    message = _text(recorded.message)
    named = _text(recorded.current_pod)
    pick = next((c for c in cells if c["name"] == named), None) if named else None
    pick = pick or next((c for c in cells if c["name"] in message and c["state"] != DONE), None)
    pick = pick or next((c for c in cells if c["state"] not in (DONE, OUTDATED)), None)
    pick = pick or next((c for c in cells if c["state"] == OUTDATED), None)
    if pick is None:
        return
    reason = _text(recorded.stalled_reason) or Phase.STALLED
    pick["stage"] = pick["state"]
    pick["state"] = STALLED
    pick["detail"] = f"{reason} at {pick['stage']}: {message}" if message else f"{reason} at {pick['stage']}"


def progress_of(roles: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """(pods done, pods in total)."""
    cells = [c for r in roles for c in r["pods"]]
    return sum(1 for c in cells if c["state"] == DONE), len(cells)


def sync_of(rollout: Obj | None, sources: Sequence[NamedSource] = ()) -> str:
    """The cluster's SYNC as `gitops-kd status` says it (status/sync.cluster_sync): Suspended, Refused (the branch
    head refused, the cluster left at the applied commit), OutOfSync or Synced; Unknown without a KDRollout."""
    if rollout is None:
        return "Unknown"
    source = source_for(rollout, sources)
    return cluster_sync(rollout, source.record if source is not None else None).status


def revert_command(rollout: Obj | None) -> str | None:
    """`git revert <sha>` for a stalled rollout: the failure's commit, else the attempt's commit; None when the
    failure record says a revert would be refused (status.failure.rollback.possible false)."""
    status = _rollout_status(rollout)
    if not status.stalled:
        return None
    failure = status.failure or Failure()
    if failure.rollback.get("possible") is False:
        return None
    commit = failure.commit or status.commit or _spec(rollout).get("commit")
    return f"git revert {commit}" if commit else None


def roll_forward(rollout: Obj | None) -> str | None:
    """For a stalled rollout whose failure record says a revert would be refused: what to do instead."""
    status = _rollout_status(rollout)
    failure = status.failure or Failure()
    back = failure.rollback
    if not status.stalled or back.get("possible") is not False or not failure.commit:
        return None
    return Rollback(False, _text(back.get("why"))).advice(failure.commit)


def event_time(event: Obj) -> str:
    return _text(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or _meta(event).get("creationTimestamp")
    )


def event_row(event: Obj) -> dict[str, Any]:
    ref = event.get("involvedObject") or {}
    return {
        "time": event_time(event),
        "type": _text(event.get("type")),
        "reason": _text(event.get("reason")),
        "object": f"{_text(ref.get('kind'))} {_text(ref.get('namespace'))}/{_text(ref.get('name'))}".strip(),
        "message": _text(event.get("message")),
        "count": int(event.get("count") or 1),
    }


def alerts(
    events: Iterable[Obj], *, sources: Sequence[NamedSource] = (), rollouts: Iterable[Obj] = (), limit: int = 10
) -> list[dict[str, Any]]:
    """What is wrong now, never what was: each GitOpsKDSource that is not Ready (the branch head refused, Git
    unreadable, the record untrusted), each Stalled KDRollout, then the DriftDetected Warning events no later
    DriftReverted / DriftResolved event closed, newest first. A refusal a later commit superseded, or drift
    already reverted, is gone from the panel (the events stay in each cluster's page)."""
    now = [_source_alert(s) for s in sources if s.ready == "False"]
    now += [_stall_alert(r) for r in rollouts if _rollout_status(r).stalled]
    return now + _open_drift(list(events), limit)


def _source_alert(source: NamedSource) -> dict[str, Any]:
    return {
        "reason": source.reason or "NotReady",
        "time": "",
        "type": "Warning",
        "closed": False,
        "object": f"GitOpsKDSource {source.namespace}/{source.name}",
        "message": source.message,
    }


def _stall_alert(rollout: Obj) -> dict[str, Any]:
    status = _rollout_status(rollout)
    since = next((c.get("lastTransitionTime") for c in status.conditions if c.get("type") == "Stalled"), "")
    return {
        "reason": _text(status.stalled_reason) or Phase.STALLED,
        "time": _text(since),
        "type": "Warning",
        "closed": False,
        "object": f"KDRollout {_text(_meta(rollout).get('namespace'))}/{_text(_meta(rollout).get('name'))}",
        "message": _text(status.message),
    }


def _open_drift(events: list[Obj], limit: int) -> list[dict[str, Any]]:
    closed: dict[tuple[str, str, str], str] = {}
    for e in events:
        if e.get("reason") in DRIFT_CLOSED:
            ref = e.get("involvedObject") or {}
            k = (_text(ref.get("kind")), _text(ref.get("namespace")), _text(ref.get("name")))
            closed[k] = max(closed.get(k, ""), event_time(e))
    out = []
    for e in events:
        if e.get("reason") != DRIFT_DETECTED or e.get("type") != "Warning":
            continue
        row = event_row(e)
        ref = e.get("involvedObject") or {}
        k = (_text(ref.get("kind")), _text(ref.get("namespace")), _text(ref.get("name")))
        row["closed"] = closed.get(k, "") >= row["time"] != ""
        if not row["closed"]:
            out.append(row)
    out.sort(key=lambda r: r["time"], reverse=True)
    return out[:limit]


def cluster_events(
    events: Iterable[Obj], kdcluster: Obj | None, rollout: Obj | None, member_names: Iterable[str], *, limit: int = 15
) -> list[dict[str, Any]]:
    """The newest events about the cluster, its KDRollout or one of its member objects."""
    namespace = _text(_meta(kdcluster or rollout).get("namespace"))
    names = {_text(_meta(kdcluster or rollout).get("name")), *member_names}
    rows = [
        event_row(e)
        for e in events
        if _text((e.get("involvedObject") or {}).get("namespace")) == namespace
        and _text((e.get("involvedObject") or {}).get("name")) in names
    ]
    rows.sort(key=lambda r: r["time"], reverse=True)
    return rows[:limit]


def _cluster_summary(
    health: ClusterHealth,
    rollout: Obj | None,
    roles: list[dict[str, Any]],
    kdcluster: Obj | None,
    sources: Sequence[NamedSource] = (),
) -> dict[str, Any]:
    done, total = progress_of(roles)
    status = _rollout_status(rollout)
    return {
        "namespace": health.namespace,
        "name": health.name,
        "app": health.app,
        "wave": wave_of(kdcluster),
        "liveVersion": health.live_version or None,
        "targetVersion": health.target_version or None,
        "commit": _text(_spec(rollout).get("commit")) or None,
        "phase": health.phase or None,
        "step": status.step,
        "sync": sync_of(rollout, sources),
        "health": health.health.status.value,
        "healthMessage": health.health.message,
        "podsDone": done,
        "podsTotal": total,
        "stalledReason": _text(status.stalled_reason) or None,
        "revert": revert_command(rollout),
    }


def fleet_view(
    clusters: Sequence[tuple[ClusterHealth, Obj | None, Obj | None, Obj | None, list[Obj], list[Obj]]],
    kdapps: Iterable[Obj],
    events: Iterable[Obj],
    *,
    info: Mapping[str, Any] | None = None,
    forbidden: Sequence[str] = (),
    sources: Sequence[NamedSource] = (),
) -> dict[str, Any]:
    """The fleet page: one entry per app (namespace, name) with its clusters by wave, and the alerts.

    ``clusters``: (health, rollout, kdcluster, kdapp, statefulsets, pods) per managed cluster.
    """
    apps: dict[tuple[str, str], dict[str, Any]] = {}
    for app in kdapps:
        meta = _meta(app)
        key = (_text(meta.get("namespace")), _text(meta.get("name")))
        apps[key] = {
            "namespace": key[0],
            "name": key[1],
            "liveVersion": _text(_spec(app).get("version")) or None,
            "desiredVersion": None,
            "commit": None,
            "clusters": [],
        }
    for health, rollout, kdcluster, kdapp, statefulsets, pods in clusters:
        roles = pod_states(rollout, kdapp, kdcluster, statefulsets, pods)
        row = _cluster_summary(health, rollout, roles, kdcluster, sources)
        key = (health.namespace, health.app)
        entry = apps.setdefault(
            key,
            {"namespace": key[0], "name": key[1], "liveVersion": None, "desiredVersion": None, "commit": None, "clusters": []},
        )
        entry["clusters"].append(row)
    out = []
    for key in sorted(apps):
        entry = apps[key]
        rows = entry.pop("clusters")
        targets = sorted({r["targetVersion"] for r in rows if r["targetVersion"]})
        commits = sorted({r["commit"] for r in rows if r["commit"]})
        entry["desiredVersion"] = ", ".join(targets) or None
        entry["commit"] = commits[0] if len(commits) == 1 else (", ".join(c[:12] for c in commits) or None)
        waves: dict[int, list[dict[str, Any]]] = {}
        for r in sorted(rows, key=lambda r: (r["wave"], r["name"])):
            waves.setdefault(r["wave"], []).append(r)
        entry["waves"] = [{"wave": w, "clusters": waves[w]} for w in sorted(waves)]
        if rows or entry["liveVersion"]:
            out.append(entry)
    rollouts = [r for _h, r, *_rest in clusters if r is not None]
    return {
        "apps": out,
        "alerts": alerts(events, sources=sources, rollouts=rollouts),
        "controller": dict(info or {}),
        "forbidden": list(forbidden),
    }


def _port_text(port: Mapping[str, Any]) -> str:
    name = _text(port.get("name"))
    return f"{name + ' ' if name else ''}{port.get('port')}/{_text(port.get('protocol')) or 'TCP'}"


def cluster_view(
    health: ClusterHealth,
    rollout: Obj | None,
    kdcluster: Obj | None,
    kdapp: Obj | None,
    objects: Mapping[str, Sequence[Obj]],
    events: Iterable[Obj],
    *,
    info: Mapping[str, Any] | None = None,
    forbidden: Sequence[str] = (),
    sources: Sequence[NamedSource] = (),
) -> dict[str, Any]:
    """The cluster page."""
    roles = pod_states(rollout, kdapp, kdcluster, objects.get("statefulsets") or [], objects.get("pods") or [])
    summary = _cluster_summary(health, rollout, roles, kdcluster, sources)
    recorded = _rollout_status(rollout)
    rules, rules_source = data_rules(rollout, kdapp)
    dirs = []
    model = app_model(kdapp)
    for role in roles:
        for directory, action in dir_actions(persisted_dirs(kdapp, role["id"], model), rules):
            dirs.append({"role": role["id"], "dir": directory, "action": action})
    services = []
    unreachable = {u.service: u for u in health.unreachable}
    for svc in sorted(objects.get("services") or [], key=lambda s: _text(_meta(s).get("name"))):
        selector = _spec(svc).get("selector") or {}
        name = _text(_meta(svc).get("name"))
        services.append(
            {
                "name": name,
                "role": _text(_labels(svc).get(layout.ROLE_LABEL)) or None,
                "pod": _text(selector.get(POD_NAME_LABEL)) or None,
                "type": _text(_spec(svc).get("type")) or None,
                "ports": [_port_text(p) for p in _spec(svc).get("ports") or ()],
                "unreachable": unreachable[name].describe() if name in unreachable else None,
            }
        )
    members = [_text(_meta(o).get("name")) for kind in ("statefulsets", "pods", "services") for o in objects.get(kind) or ()]
    failure = recorded.failure.to_obj() if recorded.failure is not None else {}
    return {
        **summary,
        "message": recorded.message,
        "currentPod": recorded.current_pod,
        "direction": recorded.direction,
        "fromVersion": recorded.from_version,
        "startedAt": recorded.started_at,
        "failure": {k: _text(failure.get(k)) for k in ("commit", "reason", "policy", "revertCommit", "note") if failure.get(k)}
        or None,
        "rollForward": roll_forward(rollout),
        "roles": roles,
        "dataRules": {"source": rules_source, "dirs": dirs},
        "services": services,
        "unreachable": [u.to_obj() for u in health.unreachable],
        "events": cluster_events(events, kdcluster, rollout, members),
        "objects": [o.as_dict() for o in health.objects],
        "controller": dict(info or {}),
        "forbidden": list(forbidden),
    }


def _duration(started: str | None, finished: str | None) -> str | None:
    a, b = parse_time(started), parse_time(finished)
    if a is None or b is None:
        return None
    seconds = int((b - a).total_seconds())
    if seconds < 0:
        return None
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def history_view(
    app: str, namespace: str, rollouts: Iterable[Obj], subject: Callable[[str], str | None] = lambda _sha: None
) -> dict[str, Any]:
    """The history page of one app: every entry of every KDRollout of the app, newest first."""
    mine = [r for r in rollouts if _spec(r).get("app") == app and _text(_meta(r).get("namespace")) == namespace]
    entries: list[HistoryEntry] = sorted((e for r in mine for e in entries_of(r)), key=sort_key, reverse=True)
    subjects: dict[str, str | None] = {}
    rows = []
    for e in entries:
        if e.commit and e.commit not in subjects:
            subjects[e.commit] = subject(e.commit)
        rows.append(
            {
                **e.as_dict(),
                "subject": (subjects.get(e.commit or "") if e.commit else None) or e.subject,
                "duration": _duration(e.started, e.finished),
            }
        )
    return {"app": app, "namespace": namespace, "clusters": len(mine), "entries": rows}
