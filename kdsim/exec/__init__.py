"""The pods/exec and port-forward wire protocols: Kubernetes' WebSocket channel protocols, SPDY/3.1 and the upgrade."""
