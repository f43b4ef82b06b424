"""KubeDirector facts the product relies on (label keys, container and volume names, object naming; the spec its
webhook stores in place of Git's, normalize.py; its StorageClass rule, storage.py)."""
