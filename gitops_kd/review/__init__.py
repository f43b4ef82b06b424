"""Review of a change before it is merged: what merging would do, per app and cluster (pure)."""

from gitops_kd.review.build import review
from gitops_kd.review.model import AppReview, ClusterReview, DirRule, PortChange, Review, RoleReview
from gitops_kd.review.synthetic import as_live

__all__ = ["AppReview", "ClusterReview", "DirRule", "PortChange", "Review", "RoleReview", "as_live", "review"]
