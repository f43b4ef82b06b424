"""port-forward's protocol names: portforward.k8s.io over SPDY/3.1 and client-go's WebSocket tunnel of it."""

from __future__ import annotations

PROTOCOLS = ("portforward.k8s.io",)
TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"  # client-go's WebSocket tunnelling of the same protocol
