"""The differential check: the fixed requests of tests/real/diffcases.py sent to the embedded cluster, each answer's
shape compared with the real kube-apiserver v1.20.2's recorded answer (tests/real/fixtures). Every difference is
listed, with why, in KNOWN; the table in docs/embedded-cluster.md is this test's output
(GITOPS_KD_WRITE_DIFF_TABLE=1 rewrites it)."""

from __future__ import annotations

import json
import os
import ssl
from pathlib import Path

from tests.kdcluster import embedded_cluster
from tests.real.differential import FIXTURE, record_on
from tests.real.shapes import differences

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "embedded-cluster.md"
BEGIN, END = "<!-- differential table: begin -->", "<!-- differential table: end -->"

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


def table(rows: list[tuple[str, int, int, list[str]]]) -> str:
    lines = ["| request | real (v1.20.2) | embedded | status |", "| --- | --- | --- | --- |"]
    for case, real, emb, diff in rows:
        # the reason only: the detailed paths can vary with timing (e.g. pod status written yet or not)
        state = "same shape" if not diff else ("known: " + KNOWN[case] if case in KNOWN else "DIFFERS")
        lines.append(f"| {case} | {real} | {emb} | {state} |")
    return "\n".join(lines)


def test_embedded_answers_have_the_real_shapes_or_a_known_reason(tmp_path: Path) -> None:
    expected = json.loads(FIXTURE.read_text())["records"]
    with embedded_cluster(tmp_path / "cluster", controllers=True) as cluster:
        ca = cluster.server.tls.ca_cert if cluster.server.tls is not None else None
        tls = ssl.create_default_context(cadata=ca.decode() if ca else None)
        from kubernetes import client

        client.CoreV1Api(cluster.api_client()).create_namespace({"metadata": {"name": "diff"}})
        got = record_on(cluster.url, tls, "diff", until_timeout=15)
    rows = [(r["case"], r["status"], e["status"], differences(r, e)) for r, e in zip(expected, got)]
    text = table(rows)
    if os.environ.get("GITOPS_KD_WRITE_DIFF_TABLE"):
        doc = DOC.read_text()
        head, rest = doc.split(BEGIN, 1) if BEGIN in doc else (doc + "\n", END)
        DOC.write_text(head + BEGIN + "\n" + text + "\n" + END + rest.split(END, 1)[1])
    unexplained = [f"{case}: {diff}" for case, _r, _e, diff in rows if diff and case not in KNOWN]
    stale = [case for case, _r, _e, diff in rows if not diff and case in KNOWN]
    assert not unexplained, "the embedded cluster differs from kube-apiserver v1.20.2:\n" + "\n".join(unexplained)
    assert not stale, f"listed as known but now the same: {stale}"
    assert BEGIN + "\n" + text + "\n" + END in DOC.read_text(), (
        "docs/embedded-cluster.md's differential table is stale: GITOPS_KD_WRITE_DIFF_TABLE=1 pytest this test"
    )
