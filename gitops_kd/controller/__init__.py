"""Controller: Git poller, informers, the keyed reconcilers, the HTTP endpoints; wired once by build_manager."""

from gitops_kd.controller.manager import build_manager
from gitops_kd.controller.options import Options
from gitops_kd.controller.runtime import Manager

__all__ = ["Manager", "Options", "build_manager"]
