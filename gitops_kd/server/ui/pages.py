"""Server-rendered HTML of the UI pages from the views (gitops_kd/server/ui/views.py); pure string building.

Every value from the cluster or Git goes through ``esc`` (html.escape, quotes included). Each page is a
document around a *live fragment* (``fleet_fragment`` ...): the JSON endpoints return the same fragment,
which ui.js swaps in, so there is one renderer and no templating in the browser.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from gitops_kd.constants import Phase
from gitops_kd.server.ui.views import SEQUENCE, STALLED, STATE_TEXT

PREFIX = "/ui"


def esc(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _q(segment: str) -> str:
    return quote(segment, safe="")


def cluster_url(namespace: str, name: str) -> str:
    return f"{PREFIX}/clusters/{_q(namespace)}/{_q(name)}"


def history_url(namespace: str, app: str) -> str:
    return f"{PREFIX}/apps/{_q(namespace)}/{_q(app)}/history"


def _short(sha: Any) -> str:
    text = "" if sha is None else str(sha)
    return text[:12] if len(text) == 40 else text


def _commit(sha: Any) -> str:
    if not sha:
        return '<span class="none">-</span>'
    return f'<code title="{esc(sha)}">{esc(_short(sha))}</code>'


def _or_dash(value: Any) -> str:
    return esc(value) if value not in (None, "") else '<span class="none">-</span>'


def _badge(kind: str, value: Any) -> str:
    text = str(value or "Unknown")
    return f'<span class="badge {kind}-{esc(text.lower())}">{esc(text)}</span>'


def _progress(done: int, total: int, label: str) -> str:
    return (
        f'<span class="progress"><progress max="{max(total, 1)}" value="{done}" '
        f'aria-label="{esc(label)}">{done}/{total}</progress> <span>{done}/{total} pods</span></span>'
    )


def _version(live: Any, target: Any) -> str:
    if target and live != target:
        return f'{_or_dash(live)} <span aria-label="to">&rarr;</span> {esc(target)}'
    return _or_dash(live)


def _table(caption: str, headers: Sequence[str], rows: Iterable[str], *, cls: str = "", empty: str = "none") -> str:
    body = "".join(rows)
    if not body:
        body = f'<tr><td colspan="{len(headers)}" class="none">{esc(empty)}</td></tr>'
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in headers)
    return (
        f'<div class="scroll" tabindex="0" role="region" aria-label="{esc(caption)}">'
        f'<table class="{esc(cls)}"><caption>{esc(caption)}</caption><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def controller_line(info: Mapping[str, Any]) -> str:
    """What the controller follows in Git: repository, branch, the commit it last applied, a newer head."""
    if not info:
        return ""
    parts = []
    if info.get("repo"):
        parts.append(
            f"Git <code>{esc(info['repo'])}</code>"
            + (f" branch <code>{esc(info['branch'])}</code>" if info.get("branch") else "")
        )
    if info.get("appliedCommit"):
        parts.append(f"last applied commit {_commit(info['appliedCommit'])}")
    if info.get("headCommit") and info.get("headCommit") != info.get("appliedCommit"):
        parts.append(f"branch head {_commit(info['headCommit'])} (not applied yet, or refused)")
    return f'<p class="controller">{" &middot; ".join(parts)}</p>' if parts else ""


def _forbidden(forbidden: Sequence[str]) -> str:
    if not forbidden:
        return ""
    return f'<p class="note">Not shown: the controller\'s RBAC does not allow listing {esc(", ".join(forbidden))}.</p>'


def _alerts(alerts: Sequence[Mapping[str, Any]]) -> str:
    if not alerts:
        return (
            '<section class="alerts" aria-labelledby="alerts-h"><h2 id="alerts-h">Alerts</h2>'
            '<p class="none">No refused commit or drift.</p></section>'
        )
    items = []
    for a in alerts:
        closed = ' <span class="badge closed">reverted or resolved since</span>' if a.get("closed") else ""
        items.append(
            f'<li class="alert reason-{esc(str(a["reason"]).lower())}"><strong>{esc(a["reason"])}</strong> '
            f'<time>{esc(a["time"])}</time> <span class="object">{esc(a["object"])}</span>{closed}'
            f"<p>{esc(a['message'])}</p></li>"
        )
    return (
        f'<section class="alerts" aria-labelledby="alerts-h"><h2 id="alerts-h">Alerts '
        f'<span class="count">({len(alerts)})</span></h2><ul>{"".join(items)}</ul></section>'
    )


def fleet_summary(view: Mapping[str, Any]) -> str:
    """One line for screen readers (aria-live): what is rolling out and the alerts."""
    moving = [
        f"{c['name']} {c['phase']} {c['podsDone']} of {c['podsTotal']} pods"
        for app in view["apps"]
        for w in app["waves"]
        for c in w["clusters"]
        if c["phase"] not in (None, Phase.IDLE)
    ]
    text = "; ".join(moving) if moving else "All clusters idle"
    return text + (f". {len(view['alerts'])} alert(s)" if view["alerts"] else "")


def fleet_fragment(view: Mapping[str, Any]) -> str:
    out = [_alerts(view["alerts"]), _forbidden(view.get("forbidden") or ())]
    if not view["apps"]:
        out.append('<p class="none">No KubeDirectorCluster managed by gitops-kd (no KDRollout) in scope.</p>')
    for app in view["apps"]:
        ns, name = app["namespace"], app["name"]
        out.append(
            f'<section class="app" aria-labelledby="app-{esc(ns)}-{esc(name)}">'
            f'<h2 id="app-{esc(ns)}-{esc(name)}">App {esc(name)} <span class="ns">{esc(ns)}</span></h2>'
            '<dl class="facts"><div><dt>Desired (Git)</dt>'
            f'<dd data-field="desired">{_or_dash(app["desiredVersion"])}</dd></div>'
            f'<div><dt>Live KubeDirectorApp</dt><dd data-field="live">{_or_dash(app["liveVersion"])}</dd></div>'
            f"<div><dt>Git revision</dt><dd>{_commit(app['commit'])}</dd></div>"
            f'<div><dt>History</dt><dd><a href="{esc(history_url(ns, name))}">versions applied</a></dd></div></dl>'
        )
        for wave in app["waves"]:
            rows = []
            for c in wave["clusters"]:
                rows.append(
                    f'<tr data-cluster="{esc(c["namespace"])}/{esc(c["name"])}" data-wave="{wave["wave"]}">'
                    f'<th scope="row"><a href="{esc(cluster_url(c["namespace"], c["name"]))}">{esc(c["name"])}</a></th>'
                    f'<td class="ver">{_version(c["liveVersion"], c["targetVersion"])}</td>'
                    f"<td>{_badge('sync', c['sync'])}</td>"
                    f'<td>{_badge("health", c["health"])}<span class="msg">{esc(c["healthMessage"])}</span></td>'
                    f"<td>{_badge('phase', c['phase'])}</td>"
                    f"<td>{_progress(c['podsDone'], c['podsTotal'], 'pods done in ' + c['name'])}</td>"
                    f'<td class="msg step">{_or_dash(c["step"])}</td></tr>'
                )
            order = "upgraded first" if wave is app["waves"][0] else "after the waves above are Ready"
            out.append(
                _table(
                    f"Wave {wave['wave']} ({order})",
                    ("Cluster", "Version", "Sync", "Health", "Phase", "Progress", "Step"),
                    rows,
                    cls="wave",
                )
            )
        out.append("</section>")
    return "".join(out)


def _track(state: str, stage: str, skipped: Collection[str] = ()) -> str:
    """The pod's place in the upgrade sequence, as an ordered list (past, current, later steps); a step this
    rollout does not run on the pod (``skipped``) is shown so, never as passed."""
    reached = SEQUENCE.index(stage) if stage in SEQUENCE else 0
    items = []
    for i, step in enumerate(SEQUENCE):
        cls = "past" if i < reached else "current" if i == reached else "later"
        if step in skipped and i != reached:
            items.append(f'<li class="skipped" title="not run in this rollout">{esc(step)}</li>')
            continue
        if i == reached and state == STALLED:
            cls = "current stalled"
        current = ' aria-current="step"' if i == reached else ""
        items.append(f'<li class="{cls}"{current}>{esc(step)}</li>')
    return f'<ol class="track" aria-label="upgrade sequence">{"".join(items)}</ol>'


def _unreachable(members: Sequence[Mapping[str, Any]]) -> str:
    """The members a client cannot reach through their own Service (it targets other ports than the pod serves)."""
    if not members:
        return '<p data-field="unreachable">Unreachable members: none.</p>'
    items = "".join(
        f'<li data-pod="{esc(m["pod"])}">{esc(m["pod"])}: Service {esc(m["service"])} targets '
        f"{esc(', '.join(str(p) for p in m['servicePorts']))}, the pod listens on "
        f"{esc(', '.join(str(p) for p in m['podPorts']))}</li>"
        for m in members
    )
    return (
        f'<section class="alerts" data-field="unreachable"><p><strong>Unreachable members ({len(members)})</strong>: '
        f"their own Service targets other ports than their pod serves</p><ul>{items}</ul></section>"
    )


def cluster_summary(view: Mapping[str, Any]) -> str:
    text = f"{view['name']}: {view['phase'] or 'no rollout'}, {view['podsDone']} of {view['podsTotal']} pods done"
    # only the pods on the move: a screen reader hears what changed, not the whole fleet of pods
    cells = [f"{p['name']} {p['state']}" for r in view["roles"] for p in r["pods"] if p["state"] not in ("done", "outdated")]
    if view.get("revert"):
        text += f". Stalled ({view['stalledReason']}); to roll back run {view['revert']}"
    elif view.get("rollForward"):
        text += f". Stalled ({view['stalledReason']}); {view['rollForward']}"
    if view.get("unreachable"):
        text += f". {len(view['unreachable'])} member(s) unreachable through their own Service"
    return text + (". " + ", ".join(cells) if cells else "")


def cluster_fragment(view: Mapping[str, Any]) -> str:
    out = []
    facts = [
        (
            "App",
            esc(view["app"])
            + (f' <a href="{esc(history_url(view["namespace"], view["app"]))}">history</a>' if view["app"] else ""),
        ),
        ("Version", _version(view["liveVersion"], view["targetVersion"])),
        ("Phase", _badge("phase", view["phase"])),
        ("Sync", _badge("sync", view["sync"])),
        ("Health", _badge("health", view["health"]) + f' <span class="msg">{esc(view["healthMessage"])}</span>'),
        ("Wave", esc(view["wave"])),
        ("Git revision", _commit(view["commit"])),
        ("Progress", _progress(view["podsDone"], view["podsTotal"], "pods done")),
        ("Step", _or_dash(view["step"])),
    ]
    wide = ' class="wide"'
    out.append(
        '<dl class="facts">'
        + "".join(f"<div{wide if k in ('Health', 'Step') else ''}><dt>{esc(k)}</dt><dd>{v}</dd></div>" for k, v in facts)
        + "</dl>"
    )
    if view.get("revert") or view.get("rollForward"):
        failure = view.get("failure") or {}
        pushed = f"<p>gitops-kd pushed the revert {_commit(failure['revertCommit'])}.</p>" if failure.get("revertCommit") else ""
        way_out = (
            f'<p>To roll back, revert the commit in Git:</p><pre><code data-field="revert">{esc(view["revert"])}</code></pre>'
            if view.get("revert")
            else f'<p data-field="roll-forward">{esc(view["rollForward"])}</p>'
        )
        out.append(
            f'<section class="stalled-box" aria-labelledby="stalled-h"><h2 id="stalled-h">Stalled: '
            f'{esc(view["stalledReason"] or Phase.STALLED)}</h2><p class="msg" data-field="stalled-message">'
            f"{esc(view['message'])}</p>{pushed}{way_out}</section>"
        )
    elif view.get("message"):
        out.append(f'<p class="msg">{esc(view["message"])}</p>')
    out.append(_forbidden(view.get("forbidden") or ()))
    out.append(
        '<h2>Pods in upgrade order</h2><p class="legend">Each pod goes '
        + " &rarr; ".join(f'<span class="state state-{s}">{esc(s)}</span>' for s in SEQUENCE)
        + ', or <span class="state state-stalled">stalled</span> with the reason.</p>'
    )
    for index, role in enumerate(view["roles"], 1):
        rows = []
        for pod in role["pods"]:
            rows.append(
                f'<tr data-pod="{esc(pod["name"])}" data-state="{esc(pod["state"])}">'
                f'<th scope="row">{esc(pod["name"])}</th>'
                f'<td><span class="state state-{esc(pod["state"])}" data-testid="pod-state">{esc(pod["state"])}</span>'
                f"{_track(pod['state'], pod['stage'], pod.get('skipped') or ())}</td>"
                f'<td class="msg">{esc(STATE_TEXT.get(pod["state"], ""))}<br>{esc(pod["detail"])}</td>'
                f"<td><code>{_or_dash(pod['revision'])}</code></td></tr>"
            )
        out.append(
            _table(
                f"{index}. role {role['id']}: StatefulSet {role['statefulSet']}, "
                f"{len(role['pods'])} pod(s), highest ordinal first",
                ("Pod", "State", "Detail", "Revision"),
                rows,
                cls="pods",
            )
        )
    rules = view["dataRules"]
    out.append("<h2>Persisted data</h2>")
    out.append(
        _table(
            f"Data rule of every persisted directory ({rules['source']})",
            ("Role", "Directory", "Rule"),
            (
                f'<tr><td>{esc(d["role"])}</td><th scope="row"><code>{esc(d["dir"])}</code></th>'
                f"<td>{_badge('rule', d['action'])}</td></tr>"
                for d in rules["dirs"]
            ),
            empty="no persisted directory",
        )
    )
    out.append("<h2>Services</h2>")
    out.append(_unreachable(view.get("unreachable") or ()))
    out.append(
        _table(
            "Service ports (each member's own Service moves with its pod)",
            ("Service", "Role", "Pod", "Ports", "Reaches its pod"),
            (
                f'<tr data-service="{esc(s["name"])}"><th scope="row">{esc(s["name"])}</th><td>{_or_dash(s["role"])}</td>'
                f"<td>{_or_dash(s['pod'])}</td><td>{esc(', '.join(s['ports'])) or '-'}</td>"
                + (
                    f'<td class="msg unreachable">no: {esc(s["unreachable"])}</td></tr>'
                    if s.get("unreachable")
                    else "<td>yes</td></tr>"
                    if s["pod"]
                    else "<td>-</td></tr>"
                )
                for s in view["services"]
            ),
            empty="no Service",
        )
    )
    out.append("<h2>Recent events</h2>")
    out.append(
        _table(
            "Newest events of the cluster and its objects",
            ("Time", "Type", "Reason", "Object", "Message"),
            (
                f'<tr class="event-{esc(e["type"].lower())}"><td><time>{esc(e["time"])}</time></td>'
                f'<td>{esc(e["type"])}</td><th scope="row">{esc(e["reason"])}</th><td>{esc(e["object"])}</td>'
                f'<td class="msg">{esc(e["message"])}</td></tr>'
                for e in view["events"]
            ),
            empty="no event (or Events are not readable)",
        )
    )
    out.append("<h2>Objects</h2>")
    out.append(
        _table(
            "Health of every object (as gitops-kd status shows it)",
            ("Kind", "Name", "Role", "Health", "Message"),
            (
                f'<tr><td>{esc(o["kind"])}</td><th scope="row">{esc(o["name"])}</th><td>{_or_dash(o["role"])}</td>'
                f'<td>{_badge("health", o["status"])}</td><td class="msg">{esc(o["message"])}</td></tr>'
                for o in view["objects"]
            ),
        )
    )
    return "".join(out)


def history_summary(view: Mapping[str, Any]) -> str:
    return f"{len(view['entries'])} version(s) applied to {view['clusters']} cluster(s) of {view['app']}"


def history_fragment(view: Mapping[str, Any]) -> str:
    rows = []
    for e in view["entries"]:
        result = esc(e["result"]) + (f" ({esc(e['reason'])})" if e.get("reason") else "")
        if e.get("revertCommit"):
            result += f" by {_commit(e['revertCommit'])}"
        rows.append(
            f'<tr data-result="{esc(e["result"])}">'
            f'<th scope="row">{esc(e["version"])}</th><td>{_or_dash(e["fromVersion"])}</td>'
            f'<td><a href="{esc(cluster_url(e["namespace"], e["cluster"]))}">{esc(e["cluster"])}</a></td>'
            f"<td>{_commit(e['commit'])}</td><td>{_or_dash(e['subject'])}</td>"
            f"<td><time>{_or_dash(e['startedAt'])}</time></td><td><time>{_or_dash(e['finishedAt'])}</time></td>"
            f"<td>{_or_dash(e['duration'])}</td>"
            f'<td><span class="badge result-{esc(str(e["result"]).lower())}">{result}</span></td></tr>'
        )
    return _table(
        f"Every version applied to the clusters of {view['app']}, newest first",
        ("Version", "From", "Cluster", "Commit", "Subject", "Started", "Finished", "Duration", "Result"),
        rows,
        cls="history",
        empty="nothing applied yet",
    )


def document(
    title: str,
    heading: str,
    fragment: str,
    summary: str,
    *,
    live_url: str,
    refresh_ms: int,
    crumbs: Sequence[tuple[str, str]] = (),
) -> str:
    nav = "".join(f'<li><a href="{esc(url)}">{esc(text)}</a></li>' for text, url in crumbs)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} - gitops-kd</title>"
        f'<link rel="stylesheet" href="{PREFIX}/static/ui.css"></head>'
        f'<body data-live="{esc(live_url)}" data-refresh="{int(refresh_ms)}">'
        '<a class="skip" href="#main">Skip to content</a>'
        '<header><nav aria-label="Breadcrumb"><ol class="crumbs">'
        f'<li><a href="{PREFIX}/">gitops-kd fleet</a></li>{nav}</ol></nav></header>'
        f'<main id="main" tabindex="-1"><h1>{esc(heading)}</h1>'
        f'<p id="announce" class="announce" aria-live="polite" aria-atomic="true">{esc(summary)}</p>'
        f'<div id="live">{fragment}</div></main>'
        "<footer><p>Read-only view: changes reach the cluster only through Git. "
        '<span id="status" role="status">Live updates every '
        f"{refresh_ms / 1000:g}s.</span></p></footer>"
        f'<script src="{PREFIX}/static/ui.js" defer></script></body></html>\n'
    )


def error_document(status: int, message: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{status} - gitops-kd</title><link rel="stylesheet" href="{PREFIX}/static/ui.css"></head>'
        f'<body><main id="main"><h1>{status}</h1><p>{esc(message)}</p>'
        f'<p><a href="{PREFIX}/">Back to the fleet</a></p></main></body></html>\n'
    )
