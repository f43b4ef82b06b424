"""One replica of `gitops-kd run` under leader election: HTTP endpoints always, the Controller only while leading."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from gitops_kd.constants import LEASE_DURATION, LEASE_RENEW_DEADLINE, LEASE_RETRY_PERIOD
from gitops_kd.controller.http import HttpServer, make_app
from gitops_kd.controller.pollrequest import request_poll
from gitops_kd.controller.runtime import Manager
from gitops_kd.kube.layouts import COUNT_LABEL, INSTANCE_LABEL, LEADER_LABEL, ShardedWatch
from gitops_kd.kube.leader import LeaderElector, default_identity
from kubeplumb.rest import RestClient

log = logging.getLogger(__name__)


class Replica:
    """Campaigns for the Lease `lease_namespace/lease_name`; starts `controller` when it leads.

    The HTTP endpoints (from `listen`) are served from the start, leading or not, so liveness and
    readiness probes and /metrics (`gitops_kd_leader` 0 or 1) work on a standby: /healthz is the
    controller's health; /readyz is the controller's readiness while leading and ok on a standby that
    is campaigning (it is ready to take over). A /webhook on a standby is recorded on the GitOpsKDSource
    named after the Lease (as `gitops-kd sync` does), so the leader polls within seconds. Losing the Lease
    sets `lost` at once: the caller stops the controller (no new action starts; a running one finishes) and
    exits so a restart campaigns again; `on_lost` is called then.

    One fence with sharded replicas of the same instance (docs/design/sharding.md): the Lease is labelled as layout 1
    (gitops-kd.io/instance, gitops-kd.io/shards=1, gitops-kd.io/leader), which sharded replicas read; and this replica
    leads only while no sharded replica's Lease is live: a leader that sees one yields (stops the controller, its
    running action finishing under a renewed Lease, then releases the Lease) and exits like a lost Lease.
    """

    def __init__(
        self,
        controller: Manager,
        api_client: ApiClient,
        *,
        lease_namespace: str,
        lease_name: str,
        listen: tuple[str, int] | None,
        webhook_secret: bytes | None = None,
        metrics: Any = None,
        identity: str | None = None,
        lease_duration: float = LEASE_DURATION,
        renew_deadline: float = LEASE_RENEW_DEADLINE,
        retry_period: float = LEASE_RETRY_PERIOD,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self.controller = controller
        self.on_lost = on_lost
        self.metrics = metrics
        self.lost = threading.Event()
        self._rest, self._lease = RestClient(api_client), (lease_namespace, lease_name)  # the GitOpsKDSource's name
        self.leading = threading.Event()
        # bounded like the elector's own reads: a list slower than the renew deadline counts as failed (a leader keeps
        # leading, a candidate does not campaign)
        sharded = ShardedWatch(RestClient(api_client, timeout=renew_deadline), lease_namespace, lease_name)
        self.elector = LeaderElector(
            api_client,
            namespace=lease_namespace,
            name=lease_name,
            identity=identity or default_identity(),
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
            on_started_leading=self._started,
            on_stopped_leading=self._stopped,
            labels={INSTANCE_LABEL: lease_name, COUNT_LABEL: "1", LEADER_LABEL: "true"},
            may_lead=lambda: not sharded.sharded_live(),
            on_yield=controller.stop,
        )
        controller.set_fence(lambda: self.elector.is_leader)  # a deposed or frozen leader writes and execs nothing
        self.http: HttpServer | None = None
        if listen is not None:
            app = make_app(
                self, webhook_secret=webhook_secret, branch=controller.source.branch, metrics=metrics, ui=controller.ui_config()
            )
            self.http = HttpServer(app, *listen)
        self._campaigning = False
        self._stopping = False

    # -- endpoints (gitops_kd.controller.http.Triggerable) --------------------------------------------
    def trigger_poll(self) -> str | None:
        """The leader polls at once; a standby records the request on the GitOpsKDSource, which the leader polls
        for within seconds (pollrequest.py); returns what was done, for the /webhook answer."""
        if self.leading.is_set():
            self.controller.trigger_poll()
            return None
        try:
            request_poll(self._rest, self._lease[0], self._lease[1])
        except ApiException as exc:  # one line for the webhook's 503, not the client's raw response
            raise RuntimeError(
                f"standby: recording the request on gitopskdsource {self._lease[0]}/{self._lease[1]} "
                f"failed: {exc.status} {exc.reason}"
            ) from None
        log.info(
            "replica %s is standby: poll requested from the leader on gitopskdsource %s/%s", self.elector.identity, *self._lease
        )
        return f"standby: poll requested from the leader (gitopskdsource {self._lease[0]}/{self._lease[1]})"

    @property
    def ready(self) -> bool:
        if self.leading.is_set():
            return self.controller.ready
        return self._campaigning and not self.lost.is_set()

    @property
    def healthy(self) -> bool:
        return not self.lost.is_set() and self.controller.healthy

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> Replica:
        if self.metrics is not None:
            self.metrics.set_leader(False)
        if self.http is not None:
            self.http.start()
        self._campaigning = True
        self.elector.start()
        log.info("replica %s campaigning for Lease %s", self.elector.identity, self.elector.describe)
        return self

    def stop(self) -> None:
        """Stop the controller (a running action finishes), then release the Lease and stop serving."""
        self._campaigning = False
        self._stopping = True  # the Lease is released on purpose: not a loss
        self.controller.stop()
        self.elector.stop()
        if self.http is not None:
            self.http.stop()

    def _started(self) -> None:
        log.info("replica %s leads: starting the controller", self.elector.identity)
        self.leading.set()
        if self.metrics is not None:
            self.metrics.set_leader(True)
        threading.Thread(target=self._start_controller, name="gitops-kd-start", daemon=True).start()

    def _start_controller(self) -> None:
        if self.lost.is_set():
            return
        self.controller.start()

    def _stopped(self) -> None:
        was_leading = self.leading.is_set()
        self.leading.clear()
        if self.metrics is not None:
            self.metrics.set_leader(False)
        if was_leading and self._stopping:
            log.info("replica %s stopped leading (graceful stop)", self.elector.identity)
        elif was_leading and self.elector.yielded:
            log.warning(
                "replica %s yielded the Lease %s to sharded replicas (its action in flight finished first)",
                self.elector.identity,
                self.elector.describe,
            )
            self.lost.set()  # the controller is stopped: exit, so a restart campaigns again
            if self.on_lost is not None:
                self.on_lost()
        elif was_leading:
            log.error("replica %s lost the Lease %s: stopping reconciles", self.elector.identity, self.elector.describe)
            self.lost.set()  # the caller stops the controller at once: no new action, the running one finishes
            if self.on_lost is not None:
                self.on_lost()
