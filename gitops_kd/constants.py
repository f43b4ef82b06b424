"""Names defined once: API groups and versions, kinds, labels, annotations and phases gitops-kd uses (pure)."""
