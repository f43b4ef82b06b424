"""The pods/exec subresource of the simulated node: Kubernetes' WebSocket channel protocols and the handler."""
