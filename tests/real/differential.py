"""Send diffcases.CASES to an API server and record normalized answers; `python -m tests.real.differential --write`."""

from __future__ import annotations

import argparse
import json
import re
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from gitops_kd.testing import wait_for
from tests.real.controlplane import CRD_FILES, ROOT, ControlPlane
from tests.real.diffcases import CASES, Case

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CURRENT_VERSION = "v1.36.3"  # the current version scripts/test-real runs beside v1.20.2


def fixture_for(version: str) -> Path:
    """The recorded answers of kube-apiserver ``version`` (e.g. v1.36.3)."""
    return FIXTURES / f"apiserver-{version}.json"


FIXTURE = fixture_for("v1.20.2")  # what the embedded cluster is held to (tests/sim/test_differential_embedded.py)
CURRENT_FIXTURE = fixture_for(CURRENT_VERSION)  # and where it follows the current version (docs/embedded-cluster.md)
VOLATILE = {
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "lastTransitionTime",
    "lastProbeTime",
    "continue",
    "clusterIP",
    "clusterIPs",
    "nodePort",
    "startTime",
    "remainingItemCount",
    "ca.crt",  # kube-root-ca.crt (1.22+): the cluster CA, new each run
}
DROPPED = {"managedFields", "selfLink"}
PATTERNS = (
    (re.compile(r"too old resource version: \d+ \(\d+\)"), "too old resource version: N (N)"),
    (re.compile(r"\b(?!0{8}-)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uid>"),
    (re.compile(r"\b(default-token-|kube-api-access-)[a-z0-9]{5}\b"), r"\1<random>"),
)


def normalize(value: Any, ns: str) -> Any:
    """The answer without what differs run to run: uids, resourceVersions, times, allocated IPs and ports."""
    if isinstance(value, dict):
        return {
            k: ("<volatile>" if k in VOLATILE and v is not None else normalize(v, ns))
            for k, v in value.items()
            if k not in DROPPED
        }
    if isinstance(value, list):
        return [normalize(v, ns) for v in value]
    if isinstance(value, str):
        value = value.replace(ns, "{ns}")
        for pattern, replacement in PATTERNS:
            value = pattern.sub(replacement, value)
    return value


def send(server: str, tls: ssl.SSLContext, case: Case, ns: str) -> tuple[int, Any]:
    """One request; (status, body: JSON, or {"text": ...} when not JSON). A watch answers its first event only."""
    body = case.body
    if body is not None and not isinstance(body, str):
        body = json.dumps(body)
    data = body.replace("{ns}", ns).encode() if body is not None else None
    request = urllib.request.Request(
        server + case.path.replace("{ns}", ns),
        data=data,
        method=case.method,
        headers={"Content-Type": case.content_type, "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30, context=tls) as answer:
            status, text = answer.status, (answer.readline() if "watch=1" in case.path else answer.read())
    except urllib.error.HTTPError as err:
        status, text = err.code, err.read()
    try:
        return status, json.loads(text) if text.strip() else None
    except ValueError:
        return status, {"text": text.decode(errors="replace")}


def record(cp: ControlPlane, ns: str) -> list[dict[str, Any]]:
    """Run every case in namespace `ns` (created here, with the packaged CRDs installed) and return the records."""
    for crd in CRD_FILES:
        cp.kubectl("apply", "-f", str(crd))
    cp.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/kdrollouts.gitops-kd.io")
    cp.kubectl("create", "namespace", ns)
    return record_on(cp.server, cp.ssl_context(), ns)


def record_on(server: str, tls: ssl.SSLContext, ns: str, *, until_timeout: float = 60.0) -> list[dict[str, Any]]:
    """Every case against `server` in the existing namespace `ns`. A case polled `until` a condition that never
    comes (on a server that differs) records its last answer after `until_timeout` s, tagged "timedOut"."""
    wait_for(
        f"ServiceAccount default in {ns}",
        lambda: send(server, tls, Case("", "GET", "/api/v1/namespaces/{ns}/serviceaccounts/default"), ns)[0] == 200,
        30,
    )
    records = []
    for case in CASES:
        last: list[tuple[int, Any]] = []

        def answer(case: Case = case, last: list[tuple[int, Any]] = last) -> tuple[int, Any] | None:
            got = send(server, tls, case, ns)
            last[:] = [got]
            return got if case.until is None or case.until(*got) else None

        try:
            status, body = wait_for(case.name, answer, until_timeout, interval=0.2)
            timed_out = False
        except AssertionError:
            (status, body), timed_out = last[0], True
        entry = {
            "case": case.name,
            "request": {"method": case.method, "path": case.path, "body": case.body},
            "status": status,
            "body": normalize(body, ns),
        }
        if timed_out:
            entry["timedOut"] = True
        records.append(entry)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"write the answers to {FIXTURES.relative_to(ROOT)}/apiserver-VERSION.json (the server $REALK8S_VERSION names)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="realk8s-diff-") as tmp, ControlPlane(Path(tmp)) as cp:
        began = time.monotonic()
        records = record(cp, "diff")
        version = cp.version
        print(f"{version}: {len(records)} cases in {time.monotonic() - began:.1f}s", file=sys.stderr)
    text = json.dumps({"server": f"kube-apiserver {version}", "records": records}, indent=1, sort_keys=True) + "\n"
    if args.write:
        FIXTURES.mkdir(exist_ok=True)
        fixture_for(version).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
