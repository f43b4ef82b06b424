"""HTTP edge of the controller: push webhooks, /metrics, /healthz and /readyz."""
