"""Git source: fetch a repo of KDApp/KDCluster specs and produce the desired state and change set."""

from gitops_kd.source.errors import SourceError
from gitops_kd.source.git_source import GitSource
from gitops_kd.source.model import ChangeSet, DesiredState, Key, PollResult
from gitops_kd.source.poller import Poller
from gitops_kd.spec.limits import MAX_FILE_BYTES

__all__ = ["ChangeSet", "DesiredState", "GitSource", "Key", "MAX_FILE_BYTES", "PollResult", "Poller", "SourceError"]
