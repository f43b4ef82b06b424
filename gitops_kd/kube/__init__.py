"""Kubernetes edge of the controller: leader election on a Lease (the REST client, informer and work queue are kubeplumb's)."""
