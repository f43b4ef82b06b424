"""The GitLab CI job of repo-template/README.md: its script runs, and posts then updates one merge-request note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.review.markdown import MARKER
from tests.e2e.harness import TEMPLATE, git
from tests.review.repos import template_repo


def job() -> dict[str, Any]:
    text = (TEMPLATE / "README.md").read_text()
    block = text.split("### Reviewing merge requests", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    jobs: dict[str, Any] = yaml.safe_load(block)
    return jobs["gitops-kd"]


class FakeGitLab(BaseHTTPRequestHandler):
    """The notes API of one merge request; ``notes`` and ``calls`` live on the server."""

    def _reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def get(self) -> None:
        self.server.calls.append(("GET", self.path, self.headers["PRIVATE-TOKEN"]))  # type: ignore[attr-defined]
        self._reply(200, self.server.notes)  # type: ignore[attr-defined]

    def post(self) -> None:
        note = {"id": len(self.server.notes) + 1, "body": self._body()["body"]}  # type: ignore[attr-defined]
        self.server.notes.append(note)  # type: ignore[attr-defined]
        self.server.calls.append(("POST", self.path, note["id"]))  # type: ignore[attr-defined]
        self._reply(201, note)

    def put(self) -> None:
        note_id = int(self.path.rsplit("/", 1)[1])
        for note in self.server.notes:  # type: ignore[attr-defined]
            if note["id"] == note_id:
                note["body"] = self._body()["body"]
        self.server.calls.append(("PUT", self.path, note_id))  # type: ignore[attr-defined]
        self._reply(200, {"id": note_id})

    def log_message(self, *args: Any) -> None:
        pass

    do_GET, do_POST, do_PUT = get, post, put  # the names http.server dispatches to


@pytest.fixture
def gitlab() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeGitLab)
    server.notes = [{"id": 1, "body": "someone else's note"}]  # type: ignore[attr-defined]
    server.calls = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def run_job(checkout: Path, api: str) -> subprocess.CompletedProcess[str]:
    """The job's script after `pip install` (gitops-kd is this checkout's), as GitLab's runner runs it."""
    script = [line for line in job()["script"] if "pip install" not in line]
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
        "CI_API_V4_URL": api,
        "CI_PROJECT_ID": "7",
        "CI_MERGE_REQUEST_IID": "3",
        "GITOPS_KD_GITLAB_TOKEN": "glpat-test",
    }
    return subprocess.run(
        ["bash", "-e", "-c", "\n".join(script)], cwd=checkout, env=env, capture_output=True, text=True, timeout=180, check=False
    )


def test_gitlab_job_posts_one_note_and_updates_it(tmp_path: Path, gitlab: ThreadingHTTPServer) -> None:
    repo = template_repo(tmp_path / "origin")
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(repo), str(checkout))
    git(checkout, "checkout", "-q", "--detach", "pr")
    api = f"http://127.0.0.1:{gitlab.server_address[1]}/api/v4"
    for _ in range(2):
        done = run_job(checkout, api)
        assert done.returncode == 0, done.stderr
    notes_path = "/api/v4/projects/7/merge_requests/3/notes"
    assert [c[0] for c in gitlab.calls] == ["GET", "POST", "GET", "PUT"]  # type: ignore[attr-defined]
    assert gitlab.calls[0] == ("GET", notes_path + "?per_page=100", "glpat-test")  # type: ignore[attr-defined]
    assert gitlab.calls[3] == ("PUT", notes_path + "/2", 2)  # type: ignore[attr-defined]
    mine = gitlab.notes[1]["body"]  # type: ignore[attr-defined]
    assert mine.startswith(MARKER) and "1.0.0 → 2.0.0 (upgrade)" in mine
