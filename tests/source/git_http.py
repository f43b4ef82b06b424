"""A test Git server: the real `git http-backend` (CGI) behind HTTP Basic auth on 127.0.0.1, ephemeral port."""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

HTTP_BACKEND = Path("/usr/lib/git-core/git-http-backend")
USER = "x-access-token"


class GitHttpServer:
    """Serves the bare repositories under `root`; only `USER` with the current `token` gets in (else 401).

    `token` may be changed while serving (a rotated credential); `auth_failures` and `auth_ok` count requests.
    """

    def __init__(self, root: Path, token: str) -> None:
        self.root = root
        self.token = token
        self.auth_ok = 0
        self.auth_failures = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> GitHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)

    def authorized(self, header: str | None) -> bool:
        expected = "Basic " + base64.b64encode(f"{USER}:{self.token}".encode()).decode()
        ok = header == expected
        with self._lock:
            if ok:
                self.auth_ok += 1
            else:
                self.auth_failures += 1
        return ok

    def run_backend(self, method: str, target: str, headers: dict[str, str], body: bytes) -> bytes:
        """The CGI output (headers, blank line, body) of git http-backend for one request."""
        parts = urlsplit(target)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": method,
            "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query,
            "REMOTE_USER": USER,
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_TYPE": headers.get("content-type", ""),
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
        }
        if body:
            env["CONTENT_LENGTH"] = str(len(body))
        for name in ("content-encoding", "git-protocol"):
            if name in headers:
                env["HTTP_" + name.upper().replace("-", "_")] = headers[name]
        done = subprocess.run([str(HTTP_BACKEND)], input=body, env=env, capture_output=True, timeout=60)
        return done.stdout


def _handler(server: GitHttpServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._serve(b"")

        def do_POST(self) -> None:
            self._serve(self._body())

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while size := int(self.rfile.readline().split(b";")[0].strip(), 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()
                return b"".join(chunks)
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _serve(self, body: bytes) -> None:
            if not server.authorized(self.headers.get("Authorization")):
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            out = server.run_backend(self.command, self.path, headers, body)
            head, _, payload = out.partition(b"\r\n\r\n") if b"\r\n\r\n" in out else out.partition(b"\n\n")
            status, cgi_headers = 200, []
            for line in head.decode("latin-1").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    cgi_headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in cgi_headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
            pass

    return Handler
