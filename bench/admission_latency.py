#!/usr/bin/env python3
"""Benchmark: what the admission webhook adds to a write, on the embedded cluster, and how soon a standby judges.

Starts the e2e world (embedded cluster, repo-template, hello-dev at 1.0.0) with an in-process controller and
gitops-kd's admission server (HTTPS, its generated certificate, the caBundle it keeps), then times N
StatefulSet writes through the official client: an allowed label patch without any webhook configuration,
the same with deploy/optional/admission's configuration installed, and a denied image patch. Prints medians
and the ratio with/without, measured in this one run. Then, for C commits, the time from the leader recording
a new applied revision (GitOpsKDSource lastAppliedRevision) to a standby's judging from it (its own Git cache,
fetching the commit): the window in which that standby answers by the failure policy.

    .venv/bin/python bench/admission_latency.py --writes 50 --commits 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubernetes.client.exceptions import ApiException  # noqa: E402

from gitops_kd.admission.applied import AppliedRevision  # noqa: E402
from gitops_kd.admission.service import AdmissionServer, AdmissionSettings  # noqa: E402
from gitops_kd.drift.admit import Identities  # noqa: E402
from gitops_kd.source import DesiredState, GitSource  # noqa: E402
from gitops_kd.testing import wait_for  # noqa: E402
from tests.e2e.harness import E2E, NS  # noqa: E402

SYSTEM_NS = "gitops-kd-system"


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--commits", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-admission-") as tmp:
        world = E2E(Path(tmp))
        server = standby = None
        try:
            controller = world.start_controller(record=True)
            world.wait_ready_at("1.0.0", timeout=120)
            world.rest.create(
                "v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}}
            )

            def leader_state(sha: str) -> DesiredState | None:
                return controller.desired if controller.desired is not None and controller.desired.commit == sha else None

            revision = AppliedRevision(
                world.cluster.api_client(), controller.source, namespace=world.ns, name="gitops-kd", local=leader_state
            )
            server = AdmissionServer(
                world.cluster.api_client(),
                AdmissionSettings("127.0.0.1", 0, SYSTEM_NS),
                revision=revision,
                observed=controller.collector.snapshot,
                who=Identities(controller=frozenset({"someone-else"})),
            ).start()
            wait_for("the leader judging", lambda: revision.current().desired is not None, 30)
            assert server.http is not None
            sts = next(
                s["metadata"]["name"]
                for s in world.rest.list("apps/v1", "statefulsets", NS)["items"]
                if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
            )

            def label_writes() -> list[float]:
                out = []
                for i in range(args.writes):
                    start = time.perf_counter()
                    world.rest.patch("apps/v1", "statefulsets", NS, sts, {"metadata": {"labels": {"bench": str(i)}}})
                    out.append(time.perf_counter() - start)
                return out

            without = label_writes()
            rendered = subprocess.run(
                ["kubectl", "kustomize", str(ROOT / "deploy/optional/admission")], capture_output=True, text=True, check=False
            )
            docs = [d for d in yaml.safe_load_all(rendered.stdout) if d] if rendered.returncode == 0 else []
            if not docs:  # a Component does not render alone: read its files
                docs = [
                    yaml.safe_load((ROOT / "deploy/optional/admission" / f).read_text())
                    for f in ("service.yaml", "validatingwebhookconfiguration.yaml")
                ]
            for doc in docs:
                world.rest.create(doc["apiVersion"], doc["kind"].lower() + "s", doc["metadata"].get("namespace"), doc)
            world.rest.create(
                "v1",
                "endpoints",
                SYSTEM_NS,
                {
                    "apiVersion": "v1",
                    "kind": "Endpoints",
                    "metadata": {"name": "gitops-kd-admission"},
                    "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "admission", "port": server.http.port}]}],
                },
            )
            server.refresh()  # the caBundle now
            wait_for(
                "the caBundle",
                lambda: all(
                    w["clientConfig"].get("caBundle")
                    for w in world.rest.get(
                        "admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", None, "gitops-kd"
                    )["webhooks"]
                ),
                10,
            )
            with_hook = label_writes()
            denied = []
            for i in range(args.writes):
                start = time.perf_counter()
                try:
                    world.rest.patch(
                        "apps/v1",
                        "statefulsets",
                        NS,
                        sts,
                        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": f"evil:{i}"}]}}}},
                        patch_type="strategic",
                    )
                    raise SystemExit("an owned-field edit was not denied")
                except ApiException as exc:
                    assert exc.status == 403, exc.body
                denied.append(time.perf_counter() - start)
            standby = AppliedRevision(
                world.cluster.api_client(),
                GitSource(controller.source.url, "main", Path(tmp) / "standby-cache", default_namespace=world.ns),
                namespace=world.ns,
                name="gitops-kd",
            ).start()
            windows = [_standby_window(world, standby, i) for i in range(args.commits)]
        finally:
            if standby is not None:
                standby.stop()
                standby.source.close()
            if server is not None:
                server.stop()
            world.close()
    print(f"{args.writes} writes each; medians:")
    print(f"  allowed label patch, no webhook configuration: {_median_ms(without):7.1f} ms")
    print(
        f"  allowed label patch, webhook installed:        {_median_ms(with_hook):7.1f} ms "
        f"(x{_median_ms(with_hook) / _median_ms(without):.2f})"
    )
    print(f"  denied image patch, webhook installed:         {_median_ms(denied):7.1f} ms")
    print(
        f"{args.commits} commits; a standby judging from the newly recorded revision after "
        f"{_median_ms(windows):.1f} ms (median; max {max(windows) * 1000:.1f} ms)"
    )


def _standby_window(world: E2E, standby: AppliedRevision, i: int) -> float:
    """Commit a label change; seconds from the record naming it as applied to the standby judging from it."""
    cluster = yaml.safe_load((world.repo / "clusters/hello-dev.yaml").read_text())
    cluster["metadata"].setdefault("labels", {})["bench"] = str(i)
    sha = world.commit({"clusters/hello-dev.yaml": yaml.safe_dump(cluster, sort_keys=False)}, f"bench {i}")
    recorded = wait_for(
        "the commit recorded",
        lambda: (
            (world.rest.get("gitops-kd.io/v1alpha1", "gitopskdsources", world.ns, "gitops-kd").get("status") or {}).get(
                "lastAppliedRevision"
            )
            == sha
            and time.perf_counter()
        ),
        60,
        interval=0.005,
    )
    judged = wait_for(
        "the standby judging from it",
        lambda: (standby.current().desired is not None and standby.current().revision == sha) and time.perf_counter(),
        60,
        interval=0.005,
    )
    return max(0.0, judged - recorded)


if __name__ == "__main__":
    main()
