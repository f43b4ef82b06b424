"""Embedded cluster: a Kubernetes API server emulator on loopback with simulated controllers and kubelet."""
