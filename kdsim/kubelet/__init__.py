"""The simulated node's kubelet parts: container sandboxes, volumes, the chroot runner, pod status, probes."""
