"""KDRollout writes carry resourceVersion preconditions: a write from a stale read (a deposed leader's) gets 409."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kubernetes.client.exceptions import ApiException

from gitops_kd.execute import Executor
from gitops_kd.plan.actions import EnsureRollout
from kdsim.cluster import EmbeddedCluster
from kubeplumb.rest import RestClient
from tests.kdcluster import embedded_cluster

NS = "default"
ROLLOUT = ("gitops-kd.io/v1alpha1", "kdrollouts")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with embedded_cluster(tmp_path_factory.mktemp("rollout-rv"), controllers=False) as c:
        yield c


def ensure(name: str, target: str, commit: str) -> EnsureRollout:
    return EnsureRollout(NS, name, "hello", target, "1.0.0", commit, "upgrade")


def written_between_read_and_write(rest: RestClient, name: str, commit: str) -> Callable[[], bool]:
    """A fence that is up, and whose first check (right before the executor's first write) is the moment
    another replica, the new leader, patches the KDRollout's spec: the executor's read is then stale."""
    done: list[bool] = []

    def fence() -> bool:
        if not done:
            done.append(True)
            rest.patch(*ROLLOUT, NS, name, {"spec": {"commit": commit}})
        return True

    return fence


def spec_patches(cluster: EmbeddedCluster, name: str) -> int:
    return sum(
        1
        for e in cluster.access_log.entries()
        if e.resource == ROLLOUT[1] and e.name == name and not e.subresource and e.verb == "patch"
    )


def test_a_stale_kdrollout_spec_write_fails_with_409(cluster: EmbeddedCluster) -> None:
    """Invariant: the executor's KDRollout spec patch is conditional on the resourceVersion it read: when another
    replica wrote in between (a deposed leader's stale read), the API server refuses it with 409 and the other
    replica's spec stays; the same action from a fresh read then succeeds (the next reconcile re-plans)."""
    rest = RestClient(cluster.api_client())
    executor = Executor(cluster.api_client())
    assert executor.execute(ensure("stale-rv", "1.5.0", "a" * 40)).changed  # created, at 1.5.0
    executor.set_fence(written_between_read_and_write(rest, "stale-rv", "b" * 40))
    before = spec_patches(cluster, "stale-rv")
    with pytest.raises(ApiException) as info:
        executor.execute(ensure("stale-rv", "2.0.0", "c" * 40))
    assert info.value.status == 409
    assert spec_patches(cluster, "stale-rv") == before + 2  # the new leader's, then the refused stale one
    spec = rest.get(*ROLLOUT, NS, "stale-rv")["spec"]
    assert (spec["targetVersion"], spec["commit"]) == ("1.5.0", "b" * 40)
    assert executor.execute(ensure("stale-rv", "2.0.0", "c" * 40)).changed  # fence up, fresh read: applied
    spec = rest.get(*ROLLOUT, NS, "stale-rv")["spec"]
    assert (spec["targetVersion"], spec["commit"]) == ("2.0.0", "c" * 40)
