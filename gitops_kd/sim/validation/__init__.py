"""Validation of built-in objects as kube-apiserver does it, raising 422 Invalid with every cause."""
