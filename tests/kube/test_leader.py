"""LeaderElector against the embedded cluster's real Lease API: one leader, takeover, release, conflicts."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator

import kubernetes.client
import pytest

from gitops_kd.kube.leader import LeaderElector
from kdsim.cluster import EmbeddedCluster
from kubeplumb.rest import RestClient
from tests.kdcluster import embedded_cluster

LEASE, RENEW, RETRY = 2.0, 1.5, 0.2
JITTERED = 2.2 * RETRY  # the longest wait between two attempts of a candidate
# a candidate sees the last record change at most one attempt late and retries one attempt after expiry
TAKEOVER_MAX = LEASE + 2 * JITTERED
SLACK = 1.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with embedded_cluster(tmp_path_factory.mktemp("leader"), controllers=False) as c:
        yield c


@pytest.fixture(scope="module")
def api(cluster: EmbeddedCluster) -> Iterator[kubernetes.client.ApiClient]:
    client = cluster.api_client()
    yield client
    client.close()


class Candidate:
    """An elector plus a log of its callbacks (time, event)."""

    def __init__(self, cluster: EmbeddedCluster, lease: str, identity: str, events: list[tuple[float, str]]) -> None:
        self.identity = identity
        self.events = events
        self.client = cluster.api_client()
        self.new_leaders: list[str] = []
        self.elector = LeaderElector(
            self.client,
            namespace="default",
            name=lease,
            identity=identity,
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            on_started_leading=lambda: events.append((time.monotonic(), f"{identity} started")),
            on_stopped_leading=lambda: events.append((time.monotonic(), f"{identity} stopped")),
            on_new_leader=self.new_leaders.append,
        )

    @property
    def is_leader(self) -> bool:
        return self.elector.is_leader


class Overlap:
    """Samples every candidate's is_leader every 5 ms; records any instant where two lead."""

    def __init__(self, candidates: list[Candidate]) -> None:
        self.candidates = candidates
        self.violations: list[list[str]] = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            leaders = [c.identity for c in self.candidates if c.is_leader]
            self.samples += 1
            if len(leaders) > 1:
                self.violations.append(leaders)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def pair(cluster: EmbeddedCluster) -> Iterator[tuple[str, list[Candidate], list[tuple[float, str]], Overlap]]:
    lease = "lease-" + uuid.uuid4().hex[:8]
    events: list[tuple[float, str]] = []
    candidates = [Candidate(cluster, lease, name, events) for name in ("alpha", "beta")]
    overlap = Overlap(candidates)
    try:
        yield lease, candidates, events, overlap
    finally:
        for c in candidates:
            c.elector.stop(release=False)
            c.client.close()
        overlap.stop()
        cluster.faults.clear()
    assert overlap.samples > 10
    assert not overlap.violations, f"two leaders at once: {overlap.violations[:3]}"


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll `condition` until true; returns the seconds it took. Fails the test after `timeout`."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)
    return time.monotonic() - start


def lease_spec(api: kubernetes.client.ApiClient, name: str) -> dict:
    return RestClient(api).get("coordination.k8s.io/v1", "leases", "default", name)["spec"]


def leader_of(candidates: list[Candidate]) -> tuple[Candidate, Candidate]:
    first, second = candidates
    return (first, second) if first.is_leader else (second, first)


def test_exactly_one_of_two_leads_and_the_lease_names_it(pair, api) -> None:
    lease, candidates, events, overlap = pair
    for c in candidates:
        c.elector.start()
    wait_for(lambda: any(c.is_leader for c in candidates), LEASE + SLACK, "a leader")
    leader, follower = leader_of(candidates)
    time.sleep(3 * LEASE)  # observe steady state: the overlap sampler runs throughout
    assert leader.is_leader and not follower.is_leader
    spec = lease_spec(api, lease)
    assert spec["holderIdentity"] == leader.identity
    assert spec["leaseDurationSeconds"] == 2
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] < spec["renewTime"]  # renewed since it was acquired
    assert [e for _, e in events] == [f"{leader.identity} started"]
    assert follower.new_leaders == [leader.identity] == leader.new_leaders
    assert follower.elector.leader == leader.identity


def test_killed_leader_is_replaced_within_the_lease_duration(pair, api) -> None:
    lease, candidates, events, overlap = pair
    for c in candidates:
        c.elector.start()
    wait_for(lambda: any(c.is_leader for c in candidates), LEASE + SLACK, "a leader")
    leader, follower = leader_of(candidates)
    time.sleep(1.0)
    before = lease_spec(api, lease)
    killed_at = time.monotonic()
    leader.elector.stop(release=False)  # a crash: no release, the lease just stops being renewed
    assert not leader.is_leader
    took = wait_for(lambda: follower.is_leader, TAKEOVER_MAX + SLACK, "the follower to take over")
    assert took >= LEASE - JITTERED - 0.1, f"took over after {took:.2f}s, before the lease expired"
    after = lease_spec(api, lease)
    assert before["holderIdentity"] == leader.identity
    assert after["holderIdentity"] == follower.identity
    assert after["leaseTransitions"] == before["leaseTransitions"] + 1
    assert after["acquireTime"] > before["renewTime"]
    assert follower.new_leaders[-1] == follower.identity
    names = [e for t, e in events if t >= killed_at]
    assert names == [f"{leader.identity} stopped", f"{follower.identity} started"]


def test_graceful_release_hands_over_at_once(pair, api) -> None:
    lease, candidates, events, overlap = pair
    for c in candidates:
        c.elector.start()
    wait_for(lambda: any(c.is_leader for c in candidates), LEASE + SLACK, "a leader")
    leader, follower = leader_of(candidates)
    time.sleep(0.5)
    leader.elector.stop()  # graceful: on_stopped_leading, then the lease is released
    released = time.monotonic()
    took = wait_for(lambda: follower.is_leader, 2 * JITTERED + SLACK, "the follower to take over")
    assert took < LEASE - 0.5, f"takeover took {took:.2f}s: the release was not seen"
    spec = lease_spec(api, lease)
    assert spec["holderIdentity"] == follower.identity
    assert spec["leaseTransitions"] == 1
    stopped = [t for t, e in events if e == f"{leader.identity} stopped"]
    started = [t for t, e in events if e == f"{follower.identity} started"]
    assert stopped and started and stopped[0] <= released <= started[0]


def test_released_lease_record_has_no_holder(cluster, api) -> None:
    lease = "lease-" + uuid.uuid4().hex[:8]
    events: list[tuple[float, str]] = []
    solo = Candidate(cluster, lease, "solo", events)
    try:
        solo.elector.start()
        wait_for(lambda: solo.is_leader, SLACK, "solo to lead")
        solo.elector.stop()
        spec = lease_spec(api, lease)
        assert spec.get("holderIdentity", "") == ""
        assert spec["leaseDurationSeconds"] == 1
        assert [e for _, e in events] == ["solo started", "solo stopped"]
    finally:
        solo.elector.stop()
        solo.client.close()


def test_someone_else_renewing_makes_the_leader_step_down_at_once(pair, api) -> None:
    lease, candidates, events, overlap = pair
    alpha = candidates[0]
    alpha.elector.start()
    wait_for(lambda: alpha.is_leader, SLACK, "alpha to lead")
    rest = RestClient(api)
    current = rest.get("coordination.k8s.io/v1", "leases", "default", lease)
    current["spec"] = dict(
        current["spec"], holderIdentity="intruder", leaseDurationSeconds=2, renewTime="2030-01-01T00:00:00.000000Z"
    )
    rest.replace("coordination.k8s.io/v1", "leases", "default", lease, current)
    # alpha's next optimistic update carries the old resourceVersion: 409, re-read, intruder holds it
    took = wait_for(lambda: not alpha.is_leader, 3 * RETRY + SLACK, "alpha to step down")
    assert took < RENEW, "stepped down only at the renew deadline, not on seeing the new holder"
    assert [e for _, e in events][-1] == "alpha stopped"
    assert alpha.new_leaders[-1] == "intruder"
    # the intruder never renews: alpha, a candidate again, takes the lease back once it expires
    wait_for(lambda: alpha.is_leader, TAKEOVER_MAX + SLACK, "alpha to lead again")
    assert lease_spec(api, lease)["holderIdentity"] == "alpha"
    assert [e for _, e in events] == ["alpha started", "alpha stopped", "alpha started"]


def test_a_conflict_while_still_holder_is_retried_without_losing(pair, cluster, api) -> None:
    lease, candidates, events, overlap = pair
    alpha = candidates[0]
    alpha.elector.start()
    wait_for(lambda: alpha.is_leader, SLACK, "alpha to lead")
    cluster.faults.add("conflict", "update", "leases", count=3)
    wait_for(lambda: not cluster.faults.rules(), 10 * RETRY + SLACK, "the conflicts to be used")
    renewed = lease_spec(api, lease)["renewTime"]
    wait_for(lambda: lease_spec(api, lease)["renewTime"] != renewed, 3 * RETRY + SLACK, "a renewal after conflicts")
    assert alpha.is_leader
    assert [e for _, e in events] == ["alpha started"]


def test_leader_stops_by_the_renew_deadline_when_the_api_fails(pair, cluster) -> None:
    lease, candidates, events, overlap = pair
    alpha = candidates[0]
    alpha.elector.start()
    wait_for(lambda: alpha.is_leader, SLACK, "alpha to lead")
    cluster.faults.add("error", "*", "leases", count=10_000)
    took = wait_for(lambda: not alpha.is_leader, RENEW + SLACK, "alpha to stop leading")
    assert took <= RENEW + 0.1
    wait_for(lambda: [e for _, e in events] == ["alpha started", "alpha stopped"], SLACK, "on_stopped_leading")
    cluster.faults.clear()
    wait_for(lambda: alpha.is_leader, TAKEOVER_MAX + SLACK, "alpha to lead again once the API is back")


@pytest.mark.parametrize(
    "durations, message",
    [
        ((10, 10, 2), "leaseDuration must be greater than renewDeadline"),
        ((15, 2, 2), "renewDeadline must be greater than retryPeriod*JitterFactor"),
    ],
)
def test_bad_durations_are_rejected(api, durations, message) -> None:
    lease, renew, retry = durations
    with pytest.raises(ValueError, match=message.replace("*", r"\*")):
        LeaderElector(
            api,
            namespace="default",
            name="x",
            identity="me",
            lease_duration=lease,
            renew_deadline=renew,
            retry_period=retry,
            on_started_leading=lambda: None,
            on_stopped_leading=lambda: None,
        )


def test_empty_identity_is_rejected(api) -> None:
    with pytest.raises(ValueError, match="Lock identity is empty"):
        LeaderElector(
            api, namespace="default", name="x", identity="", on_started_leading=lambda: None, on_stopped_leading=lambda: None
        )


def test_run_blocks_in_the_callers_thread_until_stop(cluster, api) -> None:
    lease = "lease-" + uuid.uuid4().hex[:8]
    events: list[tuple[float, str]] = []
    solo = Candidate(cluster, lease, "runner", events)
    thread = threading.Thread(target=solo.elector.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: solo.is_leader, SLACK, "runner to lead")
        assert thread.is_alive()
        solo.elector.stop()  # the elector did not start this thread: stop() only signals it
        thread.join(RENEW + SLACK)
        assert not thread.is_alive()
        assert [e for _, e in events] == ["runner started", "runner stopped"]
        assert lease_spec(api, lease).get("holderIdentity", "") == ""
    finally:
        solo.elector.stop()
        solo.client.close()


def test_a_runtime_that_fails_to_start_gives_the_lease_back(cluster, api) -> None:
    lease = "lease-" + uuid.uuid4().hex[:8]
    client = cluster.api_client()
    attempts: list[str] = []

    def broken_start() -> None:
        attempts.append("start")
        raise RuntimeError("cannot start the reconciler")

    elector = LeaderElector(
        client,
        namespace="default",
        name=lease,
        identity="broken",
        lease_duration=LEASE,
        renew_deadline=RENEW,
        retry_period=RETRY,
        on_started_leading=broken_start,
        on_stopped_leading=lambda: attempts.append("stop"),
    )
    try:
        elector.start()
        # it steps down, releases, and waits a retry period before campaigning again: poll for the gap
        wait_for(
            lambda: attempts[:2] == ["start", "stop"] and lease_spec(api, lease).get("holderIdentity") == "",
            SLACK,
            "the failed start to step down and release the lease",
        )
    finally:
        elector.stop()
        client.close()


def test_a_leader_that_may_no_longer_lead_drains_under_a_renewed_lease_then_releases(api: kubernetes.client.ApiClient) -> None:
    """Invariant (one fence across layouts): a candidate does not take the Lease while may_lead() is False; a leader
    whose may_lead() turns False keeps renewing while on_yield runs (its writes stay fenced in, is_leader True, for
    longer than the lease duration), and only then steps down and releases the Lease (holder emptied)."""
    lease, rest = f"yield-{uuid.uuid4().hex[:6]}", RestClient(api)
    allowed, drained, during = threading.Event(), threading.Event(), []
    events: list[tuple[float, str]] = []
    elector: LeaderElector

    def drain() -> None:
        deadline = time.monotonic() + 2 * LEASE
        while time.monotonic() < deadline:
            during.append((elector.is_leader, _holder(rest, lease)))
            time.sleep(RETRY)
        drained.set()

    elector = LeaderElector(
        api,
        namespace="default",
        name=lease,
        identity="leader-1",
        lease_duration=LEASE,
        renew_deadline=RENEW,
        retry_period=RETRY,
        on_started_leading=lambda: events.append((time.monotonic(), "started")),
        on_stopped_leading=lambda: events.append((time.monotonic(), "stopped")),
        labels={"gitops-kd.io/leader": "true"},
        may_lead=allowed.is_set,
        on_yield=drain,
    )
    elector.start()
    try:
        time.sleep(5 * RETRY)
        assert not events and rest.get_or_none("coordination.k8s.io/v1", "leases", "default", lease) is None
        allowed.set()
        wait_for(lambda: elector.is_leader, 10, "leading once allowed")
        got = rest.get("coordination.k8s.io/v1", "leases", "default", lease)
        assert got["metadata"]["labels"] == {"gitops-kd.io/leader": "true"}
        allowed.clear()
        wait_for(drained.is_set, 10, "drained")
        assert during and all(leading and holder == "leader-1" for leading, holder in during), during
        wait_for(lambda: _holder(rest, lease) == "", 5, "released after the drain")
        assert [e for _, e in events] == ["started", "stopped"] and elector.yielded
    finally:
        elector.stop()


def _holder(rest: RestClient, lease: str) -> str:
    got = rest.get_or_none("coordination.k8s.io/v1", "leases", "default", lease) or {}
    return str((got.get("spec") or {}).get("holderIdentity") or "")
