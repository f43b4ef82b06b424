"""Controller runtime: Git poller, informers, the plan/execute loop and the HTTP endpoints."""

from gitops_kd.controller.runtime import Controller

__all__ = ["Controller"]
