"""The request-head limit of the real kube-apiserver and kubelet, applied by the embedded servers (aiohttp).

kube-apiserver (k8s.io/apiserver pkg/server/secure_serving.go) and the kubelet (pkg/kubelet/server) both serve with
Go's `http.Server{MaxHeaderBytes: 1 << 20}`: a request line (the URL, with an exec's `command=` arguments) and
header fields up to 1 MiB are accepted. aiohttp's defaults (8190 bytes a line) would refuse an exec request whose
command is longer than about 8 KB, which the real servers run. Beyond the limit Go answers 431 Request Header
Fields Too Large, aiohttp 400 Bad Request: either way the client's request is refused.
"""

from __future__ import annotations

from typing import Any

MAX_HEADER_BYTES = 1 << 20


def request_limits() -> dict[str, Any]:
    """aiohttp `AppRunner` keyword arguments: request line and each header field up to MAX_HEADER_BYTES."""
    return {"max_line_size": MAX_HEADER_BYTES, "max_field_size": MAX_HEADER_BYTES}
