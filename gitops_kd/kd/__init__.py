"""KubeDirector facts the product relies on (label keys, container and volume names, object naming)."""
