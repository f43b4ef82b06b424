"""HTTP edge of the controller: push webhooks in, /metrics, /healthz and /readyz, drift alert webhooks out."""
