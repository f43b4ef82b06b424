"""The simulated node's kubelet: the node agent (agent.py), sandboxes, volumes, the chroot runner, pod status, probes."""
