"""Execute: apply one planned action at a time against the cluster, idempotently."""
