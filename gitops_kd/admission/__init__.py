"""The validating admission webhook every gitops-kd replica serves: its HTTPS server, the revision it judges from
(applied.py), its answer when it cannot judge (policy.py), serving certificate and caBundle upkeep."""
