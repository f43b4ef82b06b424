"""Diff: desired vs observed, classified per role and field (pure)."""
