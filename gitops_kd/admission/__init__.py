"""The validating admission webhook gitops-kd serves: its HTTPS server, serving certificate and caBundle upkeep."""
