"""Generic Kubernetes plumbing shared by gitops_kd and kdsim (nothing of KubeDirector, nothing of gitops-kd)."""
