"""The web UI over HTTP: pages and their JSON twins, static files, 404/405, escaping, auth (401), RBAC gaps."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from gitops_kd.controller.http import make_app
from gitops_kd.server.ui import AuthFileError, UiAuth, UiConfig, redact_url
from gitops_kd.server.ui.reader import UiReader

EVIL = '<script>alert("x")</script>'


class Target:
    ready = healthy = True

    def trigger_poll(self) -> None:
        pass


def world(o: Any, *, message: str = "upgrading hello", events: tuple[dict[str, Any], ...] = ()) -> list[dict[str, Any]]:
    stages = {
        "kdss-controller-0": {"revision": "ctl-new", "stage": "migrating"},
        "kdss-worker-1": {"stage": "pending"},
        "kdss-worker-0": {"stage": "pending"},
    }
    return [
        o.kdapp(),
        o.kdcluster(),
        o.rollout(message=message, step=message, pods=stages),
        o.sts("controller", 1, "ctl-new"),
        o.sts("worker", 2, "w-new"),
        o.pod("controller", 0, "ctl-new"),
        o.pod("worker", 1, "w-old"),
        o.pod("worker", 0, "w-old"),
        o.service("s-kdss-worker-0", "worker", 8081),
        *events,
    ]


@pytest.fixture
def ui_server(serve, ui_objects):
    from tests.server.conftest import StubReader

    def start(objects: list[dict[str, Any]] | None = None, auth: UiAuth | None = None, subject: Any = lambda sha: None) -> Any:
        reader = StubReader(objects if objects is not None else world(ui_objects))
        config = UiConfig(
            reader,
            auth=auth,
            refresh_seconds=1.5,
            subject=subject,  # type: ignore[arg-type]
            info=lambda: {"repo": "https://git.example.com/kd.git", "branch": "main", "appliedCommit": "c" * 40},
        )
        return serve(make_app(Target(), ui=config))

    return start


def test_pages_and_json(ui_server) -> None:
    server = ui_server(subject=lambda sha: "hello 2.0.0")
    for path in ("/ui/", "/ui/clusters/default/hello-dev", "/ui/apps/default/hello/history"):
        reply = server.request("GET", path)
        assert reply.status == 200, path
        assert reply.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in reply.headers["content-security-policy"]
        assert reply.headers["cache-control"] == "no-store"
        body = reply.body.decode()
        assert '<html lang="en">' in body and 'aria-live="polite"' in body and "<caption>" in body
        assert 'scope="col"' in body and 'src="/ui/static/ui.js"' in body and 'data-refresh="1500"' in body
        assert "Git <code>https://git.example.com/kd.git</code>" in body
    fleet = json.loads(server.request("GET", "/ui/api/fleet").body)
    assert set(fleet) == {"data", "html", "summary"}
    assert fleet["data"]["apps"][0]["waves"][0]["clusters"][0]["podsTotal"] == 3
    assert "hello-dev Upgrading 0 of 3 pods" in fleet["summary"]
    cluster = json.loads(server.request("GET", "/ui/api/clusters/default/hello-dev").body)["data"]
    assert [p["state"] for r in cluster["roles"] for p in r["pods"]] == ["migration", "outdated", "outdated"]
    assert cluster["services"] == [
        {
            "name": "s-kdss-worker-0",
            "role": "worker",
            "pod": "kdss-worker-0",
            "type": "ClusterIP",
            "ports": ["http-hello-http 8081/TCP"],
            "unreachable": None,
        }
    ]
    assert cluster["unreachable"] == []
    history = json.loads(server.request("GET", "/ui/api/apps/default/hello/history").body)["data"]
    assert history["entries"][0]["subject"] == "hello 2.0.0" and history["entries"][0]["result"] == "InProgress"
    assert server.request("GET", "/ui").status == 302


def test_static_files_and_unknown_paths(ui_server) -> None:
    server = ui_server()
    css = server.request("GET", "/ui/static/ui.css")
    assert css.status == 200 and css.headers["content-type"].startswith("text/css") and b"@media" in css.body
    js = server.request("GET", "/ui/static/ui.js")
    assert js.status == 200 and js.headers["content-type"].startswith("text/javascript")
    assert server.request("GET", "/ui/static/../../http.py").status == 404
    assert server.request("GET", "/ui/static/other.js").status == 404
    assert server.request("GET", "/ui/clusters/default/nope").status == 404
    assert server.request("GET", "/ui/clusters/kube-system/hello-dev").status == 404  # outside the scope
    assert server.request("GET", "/ui/apps/default/nope/history").status == 404
    missing = server.request("GET", "/ui/api/clusters/default/nope")
    assert missing.status == 404 and json.loads(missing.body)["status"] == 404


def test_no_write_method(ui_server) -> None:
    server = ui_server()
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert server.request(method, "/ui/").status == 405
        assert server.request(method, "/ui/api/fleet").status == 405


def test_everything_from_the_cluster_is_escaped(ui_server, ui_objects) -> None:
    o = ui_objects
    events = (o.event("CommitRefused", f"commit refused: {EVIL}"), o.event("PodReplaced", EVIL, type_="Normal"))
    server = ui_server(world(o, message=EVIL, events=events), subject=lambda sha: EVIL)
    for path in ("/ui/", "/ui/clusters/default/hello-dev", "/ui/apps/default/hello/history"):
        body = server.request("GET", path).body.decode()
        assert EVIL not in body and "alert(" in body, path
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body, path
        live = json.loads(
            server.request("GET", path.replace("/ui/", "/ui/api/", 1).rstrip("/") or "").body
            if path != "/ui/"
            else server.request("GET", "/ui/api/fleet").body
        )
        assert EVIL not in live["html"]


def test_auth_bearer_and_basic(ui_server) -> None:
    auth = UiAuth.parse("# the UI's readers\nbearer s3cret-token\nbasic ops:pa:ss\n")
    server = ui_server(auth=auth)
    for path in ("/ui/", "/ui/api/fleet", "/ui/static/ui.js", "/ui/clusters/default/hello-dev"):
        denied = server.request("GET", path)
        assert denied.status == 401, path
        assert denied.headers["www-authenticate"].startswith('Basic realm="gitops-kd"')
    assert server.request("GET", "/ui/", headers={"Authorization": "Bearer wrong"}).status == 401
    assert server.request("GET", "/ui/", headers={"Authorization": "Bearer s3cret-token"}).status == 200
    good = base64.b64encode(b"ops:pa:ss").decode()
    bad = base64.b64encode(b"ops:nope").decode()
    assert server.request("GET", "/ui/", headers={"Authorization": f"Basic {good}"}).status == 200
    assert server.request("GET", "/ui/", headers={"Authorization": f"Basic {bad}"}).status == 401
    assert server.request("GET", "/ui/", headers={"Authorization": "Basic %%%"}).status == 401
    assert server.request("GET", "/healthz").status == 200  # probes stay open


def test_bearer_only_challenge() -> None:
    assert UiAuth.parse("bearer t").challenge.startswith("Bearer ")


@pytest.mark.parametrize("text", ["", "# only a comment\n", "token abc\n", "basic nopassword\n", "basic user:\n", "bearer\n"])
def test_auth_file_errors(text: str, tmp_path) -> None:
    path = tmp_path / "auth"
    path.write_text(text)
    with pytest.raises(AuthFileError):
        UiAuth.load(path)
    with pytest.raises(AuthFileError, match="nope"):
        UiAuth.load(tmp_path / "nope")


def test_repo_url_credentials_are_not_shown() -> None:
    assert redact_url("https://x-access-token:abc@github.com/o/r.git") == "https://github.com/o/r.git"
    assert redact_url("ssh://git@host/r.git") == "ssh://host/r.git"
    assert redact_url("/srv/repo") == "/srv/repo"


class ForbiddingRest:
    """Lists what the objects give, and answers 403 for Events and PVCs (the controller's RBAC has neither)."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]]) -> None:
        self.objects = objects
        self.calls: list[str] = []

    def list(self, api_version: str, plural: str, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        self.calls.append(plural)
        if plural in ("events", "persistentvolumeclaims"):
            raise ApiException(status=403, reason="Forbidden")
        return {"items": self.objects.get(plural, [])}

    def get_or_none(self, *args: Any) -> None:
        raise AssertionError("no GET expected")


def test_reader_shows_what_rbac_forbids_as_not_shown(ui_objects) -> None:
    o = ui_objects
    reader = UiReader.__new__(UiReader)
    rest = ForbiddingRest(
        {
            "kdrollouts": [o.rollout()],
            "kubedirectorclusters": [o.kdcluster()],
            "kubedirectorapps": [o.kdapp()],
            "pods": [o.pod("controller", 0, "ctl-new")],
        }
    )
    reader.rest, reader.namespaces, reader.ttl = rest, ["default"], 10.0  # type: ignore[assignment]
    reader.record_namespace = None
    reader._clock = lambda: 0.0
    import threading

    reader._lock, reader._last = threading.Lock(), None
    snap = reader.snapshot()
    assert snap.forbidden == ["persistentvolumeclaims", "events"] and snap.events == []
    assert "secrets" not in rest.calls
    calls = len(rest.calls)
    assert reader.snapshot() is snap and len(rest.calls) == calls  # cached for the ttl
