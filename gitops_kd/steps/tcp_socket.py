"""The tcpSocket probe of a gate: passes when the member's port accepts a TCP connection (as Kubernetes')."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KEY = "tcpSocket"
SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["port"],
    "properties": {"port": {"type": "integer", "minimum": 1, "maximum": 65535}},
}


@dataclass(frozen=True)
class TcpSocket:
    """A TCP connect to the member's port (from inside the pod, on its loopback, like a kubelet probe of the pod IP)."""

    port: int
    how = "TCP socket"

    def describe(self, pod: str) -> str:
        return f"TCP connect {pod}:{self.port}"

    def command(self) -> list[str]:
        """nc -z, else python3, else bash's /dev/tcp; exit 0 only when the connection is accepted."""
        port = shlex.quote(str(self.port))
        py = shlex.quote(
            "import socket,sys\ntry:\n socket.create_connection(('127.0.0.1',int(sys.argv[1])),5).close()\n"
            "except OSError as e:\n print(e);sys.exit(1)"
        )
        script = (
            f"if command -v nc >/dev/null 2>&1; then nc -z -w 5 127.0.0.1 {port}; "
            f"elif command -v python3 >/dev/null 2>&1; then python3 -c {py} {port}; "
            f"elif command -v bash >/dev/null 2>&1; then bash -c 'exec 3<>/dev/tcp/127.0.0.1/$0' {port}; "
            f"else echo 'no nc, python3 or bash in the container for the TCP gate' >&2; exit 2; fi"
        )
        return ["/bin/sh", "-c", script]


def parse(raw: Mapping[str, Any]) -> TcpSocket:
    """The probe of spec.upgrade.gate.tcpSocket."""
    return TcpSocket(raw["port"])
