"""The real node's test images, built offline from Debian packages as archives containerd imports (build.py),
with their facts in one place (facts.py) and tests that run their programs without a node."""
