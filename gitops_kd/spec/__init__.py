"""Spec model: typed, immutable KDApp and KDCluster objects loaded and validated from files."""
