"""The simulated controllers' own small Kubernetes client: REST calls, a list+watch cache, a work queue."""
