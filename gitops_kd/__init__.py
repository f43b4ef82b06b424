"""gitops-kd: a GitOps controller for live upgrades of KubeDirector applications."""

__version__ = "0.2.0"
