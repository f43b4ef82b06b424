"""The differential check: the fixed requests of tests/real/diffcases.py sent to the embedded cluster, each answer's
shape compared with the real kube-apiserver v1.20.2's recorded answer and the current version's (tests/real/fixtures).
Every difference is listed, with why, in KNOWN (v1.20.2) and KNOWN_CURRENT; the tables in docs/embedded-cluster.md
are this test's output (GITOPS_KD_WRITE_DIFF_TABLE=1 rewrites them)."""

from __future__ import annotations

import json
import os
import ssl
from pathlib import Path
from typing import Any

import pytest

from tests.kdcluster import embedded_cluster
from tests.real.differential import CURRENT_FIXTURE, FIXTURE, record_on
from tests.real.shapes import differences

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "embedded-cluster.md"
BEGIN, END = "<!-- differential table: begin -->", "<!-- differential table: end -->"
CURRENT_BEGIN, CURRENT_END = "<!-- differential table (current): begin -->", "<!-- differential table (current): end -->"

# case -> why the embedded cluster answers differently (kept only while it does)
ITEM_KIND = "list items carry apiVersion and kind, which a real list leaves to the list itself"
KNOWN: dict[str, str] = {
    "unknown resource: 404": "the real Status has an empty `details`; the embedded one omits it (reason, code and "
    "message are the same)",
    "unknown group: 404": "a real server answers a plain-text `404 page not found` for an unregistered group (no "
    "API handler serves it); the embedded one answers a NotFound Status",
    "malformed merge patch: 500 (1.20 quirk)": "1.20 answers 500 to an undecodable merge patch; the embedded "
    "cluster answers 400 BadRequest as later versions do",
    "delete with a wrong uid precondition: 409": "same 409 Conflict; the message is worded as the storage layer of "
    "later versions words it",
    "list with limit=1: continue token": ITEM_KIND,
    "create a podtemplate (not watch-cached, see controlplane)": "the embedded cluster serves no podtemplates "
    "(nothing gitops-kd or KubeDirector uses)",
    "watch from a compacted resourceVersion: ERROR event 410 Expired": "needs podtemplates (above); the embedded "
    "watch's 410 Expired past its history is tested in tests/sim/apiserver/test_watch.py",
    "deleteCollection by label: the deleted list": ITEM_KIND,
    "create statefulset: 201": "the real create answers status {replicas: 0} and a null template "
    "creationTimestamp; the embedded one defaults persistentVolumeClaimRetentionPolicy "
    "(a field of 1.23+)",
    "statefulset settled: observedGeneration, replicas": "as above; and the embedded pods run (its kubelet), so "
    "readyReplicas/availableReplicas appear; the real fixture "
    "has no node",
    "its pods: names, labels, owner, hostname": "real pods get generateName and the ServiceAccount token volume "
    "(ServiceAccount admission); embedded pods run on sim-node "
    "(nodeName, conditions) and carry the 1.28+ pod-index label; " + ITEM_KIND,
    "its controller revisions": "the real revision's data keeps a null template creationTimestamp; " + ITEM_KIND,
    "Endpoints with a loopback address: 422": "the embedded cluster validates no Endpoints addresses and takes "
    "127.0.0.1, which the tests of the admission webhook on it use (with no pod network, loopback is where the "
    "webhook listens); the real-backend scenario serves it on the machine's own address",
}


# case -> why the embedded cluster answers differently from kube-apiserver CURRENT_VERSION (kept only while it does)
KNOWN_CURRENT: dict[str, str] = {
    "unknown resource: 404": KNOWN["unknown resource: 404"],
    "unknown group: 404": KNOWN["unknown group: 404"],
    "malformed merge patch: 500 (1.20 quirk)": "both answer 400 BadRequest now; the message differs (1.36: `error "
    "decoding patch: ...` with the JSON decoder's error, embedded: `Invalid JSON Patch`)",
    "delete with a wrong uid precondition: 409": "same 409 Conflict; 1.36 words it `the UID in the precondition (...) "
    "does not match the UID in record (...)`, the embedded cluster as the storage layer of 1.2x",
    "create with an unknown dryRun value: 422 on CreateOptions": "same 422; the embedded cluster keeps 1.20's Go "
    'rendering of the value (`[]string{"Bogus"}`), 1.36 renders it as JSON (`["Bogus"]`)',
    "delete with an unknown dryRun value: 422 on DeleteOptions": "as above",
    "list with limit=1: continue token": ITEM_KIND,
    "watch from resourceVersion 1, served by the watch cache: ADDED": "the first event of the real namespace is "
    "the kube-root-ca.crt ConfigMap (the root-ca-cert-publisher controller runs on 1.22+); the embedded cluster "
    "publishes no kube-root-ca.crt",
    "create a podtemplate (not watch-cached, see controlplane)": KNOWN[
        "create a podtemplate (not watch-cached, see controlplane)"
    ],
    "watch from a compacted resourceVersion: ERROR event 410 Expired": KNOWN[
        "watch from a compacted resourceVersion: ERROR event 410 Expired"
    ],
    "deleteCollection by label: the deleted list": ITEM_KIND,
    "create statefulset: 201": "1.36's create answers status {replicas: 0, availableReplicas: 0}; the embedded "
    "create answers no status",
    "statefulset settled: observedGeneration, replicas": "the embedded pods run (its kubelet), so readyReplicas "
    "appears; the real fixture has no node",
    "its pods: names, labels, owner, hostname": "real pods get generateName and a projected ServiceAccount token "
    "volume with its mounts (ServiceAccount admission, bound tokens); embedded pods run on sim-node (nodeName, "
    "conditions); " + ITEM_KIND,
    "its controller revisions": ITEM_KIND,
    "Endpoints with a loopback address: 422": KNOWN["Endpoints with a loopback address: 422"],
}


def table(rows: list[tuple[str, int, int, list[str]]], known: dict[str, str], version: str) -> str:
    lines = [f"| request | real ({version}) | embedded | status |", "| --- | --- | --- | --- |"]
    for case, real, emb, diff in rows:
        # the reason only: the detailed paths can vary with timing (e.g. pod status written yet or not)
        state = "same shape" if not diff else ("known: " + known[case] if case in known else "DIFFERS")
        lines.append(f"| {case} | {real} | {emb} | {state} |")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def embedded_answers(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The embedded cluster's answers to every case (one cluster for both checks)."""
    with embedded_cluster(tmp_path_factory.mktemp("diff") / "cluster", controllers=True) as cluster:
        ca = cluster.server.tls.ca_cert if cluster.server.tls is not None else None
        tls = ssl.create_default_context(cadata=ca.decode() if ca else None)
        from kubernetes import client

        client.CoreV1Api(cluster.api_client()).create_namespace({"metadata": {"name": "diff"}})
        return record_on(cluster.url, tls, "diff", until_timeout=15)


def _check(fixture: Path, known: dict[str, str], markers: tuple[str, str], got: list[dict[str, Any]]) -> None:
    """Every difference from ``fixture`` known, no known one gone, and the doc's table between ``markers`` current."""
    recorded = json.loads(fixture.read_text())
    expected, version = recorded["records"], recorded["server"].split()[-1]
    rows = [(r["case"], r["status"], e["status"], differences(r, e)) for r, e in zip(expected, got)]
    text = table(rows, known, version)
    begin, end = markers
    if os.environ.get("GITOPS_KD_WRITE_DIFF_TABLE"):
        doc = DOC.read_text()
        head, rest = doc.split(begin, 1) if begin in doc else (doc + "\n", end)
        DOC.write_text(head + begin + "\n" + text + "\n" + end + rest.split(end, 1)[1])
    unexplained = [f"{case}: {diff}" for case, _r, _e, diff in rows if diff and case not in known]
    stale = [case for case, _r, _e, diff in rows if not diff and case in known]
    assert not unexplained, f"the embedded cluster differs from kube-apiserver {version}:\n" + "\n".join(unexplained)
    assert not stale, f"listed as known but now the same: {stale}"
    assert begin + "\n" + text + "\n" + end in DOC.read_text(), (
        "docs/embedded-cluster.md's differential table is stale: GITOPS_KD_WRITE_DIFF_TABLE=1 pytest this test"
    )


def test_embedded_answers_have_the_real_shapes_or_a_known_reason(embedded_answers: list[dict[str, Any]]) -> None:
    _check(FIXTURE, KNOWN, (BEGIN, END), embedded_answers)


def test_embedded_answers_have_the_current_versions_shapes_or_a_known_reason(embedded_answers: list[dict[str, Any]]) -> None:
    """The same requests held to kube-apiserver v1.36.3's recorded answers (tests/real/fixtures)."""
    _check(CURRENT_FIXTURE, KNOWN_CURRENT, (CURRENT_BEGIN, CURRENT_END), embedded_answers)
