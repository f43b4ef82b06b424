"""A real aiohttp server on 127.0.0.1:0 in a background thread, a tiny HTTP client for the tests, and builders of
the objects the web UI reads."""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


class ServerThread:
    """Runs `app` on an ephemeral loopback port until stop()."""

    def __init__(self, app: web.Application) -> None:
        self.app = app
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup() if self._runner else asyncio.sleep(0))
        self._loop.close()

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def start(self) -> ServerThread:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("test server did not start within 10s")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None, *, chunked: bool = False
    ) -> Reply:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            if chunked:
                conn.putrequest(method, path)
                for key, value in (headers or {}).items():
                    conn.putheader(key, value)
                conn.putheader("Transfer-Encoding", "chunked")
                conn.endheaders()
                data = body or b""
                for i in range(0, len(data), 65536):
                    piece = data[i : i + 65536]
                    try:
                        conn.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    except OSError:  # the server may answer and close before reading everything
                        break
                try:
                    conn.send(b"0\r\n\r\n")
                except OSError:
                    pass
            else:
                conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()


@pytest.fixture
def serve() -> Iterator[Callable[[web.Application], ServerThread]]:
    servers: list[ServerThread] = []

    def start(app: web.Application) -> ServerThread:
        server = ServerThread(app).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


# -- the web UI: raw objects as the API server returns them, and a UI app over a fixed snapshot -----------------
UI_TEMPLATE = Path(__file__).resolve().parents[2] / "repo-template"
T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T00:01:00Z"


class UiObjects:
    """Builders of KDApp / KDCluster / KDRollout / StatefulSet / Pod / Service / Event dicts for UI tests."""

    def kdapp(self, version: str = "2.0.0", *, stanza: bool = True) -> dict[str, Any]:
        doc = yaml.safe_load((UI_TEMPLATE / "examples" / "hello-2.0.0.yaml").read_text())
        upgrade = doc["spec"].pop("upgrade")
        doc["spec"]["version"] = version
        doc["metadata"] = {"name": "hello", "namespace": "default", "annotations": {}}
        if stanza:
            doc["metadata"]["annotations"]["gitops-kd.io/upgrade"] = json.dumps(upgrade)
        return doc

    def kdcluster(self, name: str = "hello-dev", wave: int = 0) -> dict[str, Any]:
        return {
            "apiVersion": "kubedirector.hpe.com/v1beta1",
            "kind": "KubeDirectorCluster",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"gitops-kd.io/wave": str(wave)}},
            "spec": {"app": "hello", "roles": [{"id": "controller", "members": 1}, {"id": "worker", "members": 2}]},
            "status": {"state": "configured"},
        }

    def rollout(
        self,
        name: str = "hello-dev",
        *,
        phase: str = "Upgrading",
        target: str = "2.0.0",
        live: str = "1.0.0",
        direction: str = "upgrade",
        pods: dict[str, Any] | None = None,
        **status: Any,
    ) -> dict[str, Any]:
        return {
            "apiVersion": "gitops-kd.io/v1alpha1",
            "kind": "KDRollout",
            "metadata": {"name": name, "namespace": "default", "generation": 1},
            "spec": {"app": "hello", "targetVersion": target, "commit": "c" * 40},
            "status": {
                "observedGeneration": 1,
                "phase": phase,
                "appVersion": live,
                "targetVersion": target,
                "fromVersion": "1.0.0",
                "direction": direction,
                "commit": "c" * 40,
                "startedAt": T0,
                "pods": pods or {},
                **status,
            },
        }

    def sts(self, role: str, replicas: int, update: str, cluster: str = "hello-dev") -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {
                "name": f"kdss-{role}",
                "namespace": "default",
                "generation": 2,
                "labels": {"kubedirector.hpe.com/kdcluster": cluster, "kubedirector.hpe.com/role": role},
            },
            "spec": {"replicas": replicas},
            "status": {"observedGeneration": 2, "updateRevision": update, "replicas": replicas, "readyReplicas": replicas},
        }

    def pod(
        self,
        role: str,
        ordinal: int,
        revision: str,
        *,
        ready: bool = True,
        deleting: bool = False,
        created: str = T1,
        cluster: str = "hello-dev",
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": f"kdss-{role}-{ordinal}",
            "namespace": "default",
            "uid": f"{role}{ordinal}",
            "creationTimestamp": created,
            "labels": {
                "kubedirector.hpe.com/kdcluster": cluster,
                "kubedirector.hpe.com/role": role,
                "controller-revision-hash": revision,
            },
        }
        if deleting:
            meta["deletionTimestamp"] = T1
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {"containers": [{"name": "app", "image": "gitops-kd/hello:x"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
        }

    def service(self, name: str, role: str, port: int, cluster: str = "hello-dev") -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": name,
                "namespace": "default",
                "labels": {"kubedirector.hpe.com/kdcluster": cluster, "kubedirector.hpe.com/role": role},
            },
            "spec": {
                "type": "ClusterIP",
                "ports": [{"name": "http-hello-http", "port": port, "protocol": "TCP"}],
                "selector": {"statefulset.kubernetes.io/pod-name": f"kdss-{role}-0"},
            },
        }

    def event(
        self,
        reason: str,
        message: str,
        *,
        kind: str = "KubeDirectorCluster",
        name: str = "hello-dev",
        type_: str = "Warning",
        time: str = T1,
    ) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{reason}", "namespace": "default"},
            "involvedObject": {"kind": kind, "namespace": "default", "name": name},
            "reason": reason,
            "message": message,
            "type": type_,
            "lastTimestamp": time,
            "count": 1,
        }


@pytest.fixture
def ui_objects() -> UiObjects:
    return UiObjects()


class StubReader:
    """Stands in for gitops_kd.server.ui.reader.UiReader: a fixed snapshot of objects."""

    def __init__(self, objects: list[dict[str, Any]], *, scope: str = "default") -> None:
        from gitops_kd.observe.fleet import Fleet
        from gitops_kd.server.ui.reader import Snapshot

        kinds: dict[str, list[dict[str, Any]]] = {}
        for obj in objects:
            kinds.setdefault(obj["kind"], []).append(obj)

        def key(o: dict[str, Any]) -> tuple[str, str]:
            return o["metadata"]["namespace"], o["metadata"]["name"]

        def cluster_of(o: dict[str, Any]) -> tuple[str, str]:
            return o["metadata"]["namespace"], o["metadata"]["labels"]["kubedirector.hpe.com/kdcluster"]

        rollouts = {key(o): o for o in kinds.get("KDRollout", [])}
        members: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {}
        for field, kind in (
            ("statefulsets", "StatefulSet"),
            ("pods", "Pod"),
            ("services", "Service"),
            ("pvcs", "PersistentVolumeClaim"),
        ):
            grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
            for o in kinds.get(kind, []):
                grouped.setdefault(cluster_of(o), []).append(o)
            members[field] = grouped
        fleet = Fleet(sorted(rollouts), rollouts, {key(o): o for o in kinds.get("KubeDirectorCluster", [])}, members)
        self.snap = Snapshot(fleet, kinds.get("KubeDirectorApp", []), kinds.get("Event", []))
        self.scope = scope

    def snapshot(self) -> Any:
        return self.snap

    def in_scope(self, namespace: str) -> bool:
        return namespace == self.scope
