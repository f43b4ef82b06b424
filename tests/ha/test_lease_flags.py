"""`gitops-kd run --lease-duration/--lease-renew-deadline/--lease-retry-period`: checked like client-go, and used."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gitops_kd.cli import main
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess, token_kubeconfig
from tests.e2e.harness import E2E, NS
from tests.ha.test_failover import SYSTEM_NS


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ("--lease-duration", "4", "--lease-renew-deadline", "4"),
            "--lease-duration (4) must be greater than --lease-renew-deadline (4)",
        ),
        (
            ("--lease-renew-deadline", "2.4", "--lease-retry-period", "2"),
            "--lease-renew-deadline (2.4) must be greater than 1.2 times --lease-retry-period (2)",
        ),
        (
            (
                "--lease-retry-period",
                "0",
            ),
            "Invalid value for '--lease-retry-period'",
        ),
    ],
)
def test_inconsistent_lease_timings_are_a_usage_error_naming_the_flags(
    tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    result = CliRunner().invoke(main, ["run", "--repo", str(tmp_path / "no-repo"), *flags])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_the_lease_carries_the_given_duration(tmp_path: Path) -> None:
    """The Lease a replica takes says --lease-duration (what a standby waits for), and it is renewed."""
    world = E2E(tmp_path, persist=False)
    proc: RunProcess | None = None
    try:
        world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
        kubeconfig = token_kubeconfig(world.cluster, tmp_path / "sa.kubeconfig", "gitops-kd-sa")
        proc = RunProcess(
            "replica-a",
            tmp_path,
            kubeconfig,
            str(world.repo),
            "--namespace",
            NS,
            "--leader-elect",
            "--lease-duration",
            "6",
            "--lease-renew-deadline",
            "4",
            "--lease-retry-period",
            "1",
            env={"POD_NAMESPACE": SYSTEM_NS},
        )

        def lease() -> dict[str, object] | None:
            found = world.rest.get_or_none("coordination.k8s.io/v1", "leases", SYSTEM_NS, "gitops-kd")
            spec = (found or {}).get("spec") or {}
            return spec if str(spec.get("holderIdentity", "")).startswith("replica-a_") else None

        first = wait_for("replica-a holds the Lease", lease, 60)
        assert first["leaseDurationSeconds"] == 6
        wait_for("a renewal", lambda: (lease() or {}).get("renewTime") not in (None, first["renewTime"]), 30)
    finally:
        if proc is not None:
            proc.stop()
        world.close()
