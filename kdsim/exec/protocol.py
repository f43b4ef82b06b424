"""Pure framing of Kubernetes' remotecommand WebSocket channel protocols (v5, v4, v1 and base64).

Every message carries one channel: 0 stdin, 1 stdout, 2 stderr, 3 error (a metav1.Status for v4/v5,
plain text for v1), 4 resize; v5 adds 255 "close" whose payload names the channel closed. In the
binary protocols the first byte is the channel; base64.channel.k8s.io uses text frames whose first
character is the channel digit and whose rest is base64.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
V5, V4, V1, BASE64 = "v5.channel.k8s.io", "v4.channel.k8s.io", "channel.k8s.io", "base64.channel.k8s.io"
SUPPORTED = (V5, V4, V1, BASE64)


@dataclass(frozen=True)
class Frame:
    channel: int
    data: bytes


def encode(protocol: str, channel: int, data: bytes) -> bytes | str:
    """One outgoing message: bytes for a binary frame, str for a text frame (base64 protocol)."""
    if protocol == BASE64:
        return str(channel) + base64.b64encode(data).decode()
    return bytes([channel]) + data


def decode(protocol: str, message: bytes | str) -> Frame | None:
    """One incoming message (binary or text frame) as a Frame; None for an empty message."""
    if isinstance(message, str):
        if not message:
            return None
        if protocol == BASE64:
            return Frame(int(message[0]), base64.b64decode(message[1:]))
        return Frame(ord(message[0]), message[1:].encode())
    if not message:
        return None
    return Frame(message[0], bytes(message[1:]))


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def exit_status(command: Sequence[str], exit_code: int) -> dict[str, Any]:
    """The Status the kubelet reports on the error channel for a non-zero exit code."""
    shown = "[" + " ".join(command) + "]"
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"command terminated with non-zero exit code: error executing command {shown}, exit code {exit_code}",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(exit_code)}]},
    }


def internal_status(message: str) -> dict[str, Any]:
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def error_payload(protocol: str, status: dict[str, Any]) -> bytes:
    """What goes on the error channel: the Status JSON (v4/v5), or just its message (v1/base64)."""
    if protocol in (V4, V5):
        return json.dumps(status).encode()
    return b"" if status.get("status") == "Success" else str(status.get("message", "")).encode()
