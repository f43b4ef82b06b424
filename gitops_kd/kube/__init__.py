"""Kubernetes edge: client construction and thin typed helpers over the official client."""
