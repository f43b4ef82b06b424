"""A sample of the upgrade fault matrix (tests/safety/matrix.py) on kube-apiserver v1.20.2: the controller reaches
the API server only through a FaultProxy (tests/real/faultproxy.py), which counts its writes and execs and fails or
holds the k-th one as the embedded API server does; the sim node and KubeDirector, kubectl and the checks go
straight to the API server. The invariants are the matrix's (exactly the attempts Git asked for; each hook and
migration once per pod per attempt; the user's data where the rules say; Ready only when every pod runs the
version), and deploy/'s RBAC must refuse the controller nothing. REAL_FAULT_MATRIX_SAMPLE="kind@k,..." overrides
the sample."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.e2e.harness import E2E
from tests.real.controlplane import ControlPlane
from tests.real.faultproxy import FaultProxy
from tests.real.kubeconfig import write_kubeconfig
from tests.safety.matrix import RECORD_KINDS, RECORD_WRITE, RECORD_WRITE_FAILURES, Fault, Injection, sequence

pytestmark = pytest.mark.real

# kill: SIGKILL while the k-th request is held, a new process takes over; conflict: a 409 where none can come
# from the server. k = 40: the first upgrade's pod phase (N is about 130).
SAMPLE = [Fault("kill", 40), Fault("conflict", 25), Fault("record-delete", 40)]
if os.environ.get("REAL_FAULT_MATRIX_SAMPLE"):
    SAMPLE = [Fault(s.split("@")[0], int(s.split("@")[1])) for s in os.environ["REAL_FAULT_MATRIX_SAMPLE"].split(",")]
if any(f.kind == "lost" for f in SAMPLE):  # the proxy forwards a request or answers it itself, never both
    raise ValueError('REAL_FAULT_MATRIX_SAMPLE: kind "lost" is not injected by the FaultProxy (embedded cluster only)')


@pytest.mark.parametrize("fault", SAMPLE, ids=str)
def test_one_fault_at_the_real_api_server_breaks_no_invariant(
    real_world: E2E, sim_joined: ControlPlane, gitops_kd_kubeconfig: Path, tmp_path: Path, fault: Fault
) -> None:
    pki = sim_joined.pki
    assert pki is not None
    token = yaml.safe_load(gitops_kd_kubeconfig.read_text())["users"][0]["user"]["token"]
    with FaultProxy(("127.0.0.1", sim_joined.port), pki.ca.cert, pki.apiserver.cert, pki.apiserver.key) as proxy:
        kubeconfig = write_kubeconfig(tmp_path / "proxied.kubeconfig", proxy.server, pki.ca.cert, token=token)
        run = sequence(real_world, Injection(proxy.faults, kubeconfig, lambda: proxy.writes), tmp_path, fault)
    # the fault landed: exactly one request of the controller's answered by the proxy (held, for kill and freeze;
    # RECORD_WRITE_FAILURES status writes of the record for record-write; none for the other record kinds, which act
    # on the GitOpsKDSource itself)
    expected = {RECORD_WRITE: RECORD_WRITE_FAILURES}.get(fault.kind, 0 if fault.kind in RECORD_KINDS else 1)
    assert len(proxy.injected) == expected, proxy.injected
    assert run.fault == fault and run.writes > 20 and run.killed == (fault.kind in ("kill", "freeze", *RECORD_KINDS))
