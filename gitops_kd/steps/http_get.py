"""The httpGet probe of a gate: a GET from inside the member's pod, passing on a 200-399 answer (as Kubernetes)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KEY = "httpGet"
SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["port"],
    "properties": {
        "path": {"type": "string", "pattern": "^/"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "scheme": {"enum": ["HTTP", "HTTPS"]},
    },
}


@dataclass(frozen=True)
class HttpGet:
    """An HTTP GET against the member's pod IP; 200-399 passes (as a Kubernetes probe)."""

    path: str
    port: int
    scheme: str = "HTTP"
    how = "HTTP GET"

    def describe(self, pod: str) -> str:
        return f"HTTP GET {self.scheme.lower()}://{pod}:{self.port}{self.path}"

    def command(self) -> list[str]:
        """A shell command fetching the URL from inside the pod (loopback, like a kubelet probe of the pod IP):
        curl, else wget, else python3; exit 0 only for a 2xx/3xx answer."""
        path = self.path if self.path.startswith("/") else "/" + self.path
        url = shlex.quote(f"{self.scheme.lower()}://127.0.0.1:{self.port}{path}")
        py = shlex.quote(
            "import sys,urllib.request as u\ntry:\n r=u.urlopen(sys.argv[1],timeout=5)\n"
            " sys.exit(0 if r.status<400 else 1)\nexcept Exception as e:\n print(e);sys.exit(1)"
        )
        script = (
            f"if command -v curl >/dev/null 2>&1; then curl -fsSk -o /dev/null --max-time 5 {url}; "
            f"elif command -v wget >/dev/null 2>&1; then wget -q -O /dev/null -T 5 {url}; "
            f"elif command -v python3 >/dev/null 2>&1; then python3 -c {py} {url}; "
            f"else echo 'no curl, wget or python3 in the container for the HTTP gate' >&2; exit 2; fi"
        )
        return ["/bin/sh", "-c", script]


def parse(raw: Mapping[str, Any]) -> HttpGet:
    """The probe of spec.upgrade.gate.httpGet (path default "/", scheme default HTTP)."""
    return HttpGet(raw.get("path", "/"), raw["port"], raw.get("scheme", "HTTP"))
