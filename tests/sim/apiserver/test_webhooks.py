"""The embedded API server calls validating admission webhooks as kube-apiserver does: real kubectl against it,
a real HTTPS webhook server here (recording each AdmissionReview and answering what the test sets)."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from aiohttp import web

from gitops_kd.admission.certs import ServingCert, generate, service_names
from gitops_kd.controller.http import HttpServer
from kdsim.cluster import EmbeddedCluster
from tests.kdcluster import embedded_cluster

HOOK_NS, HOOK_SVC = "hooks", "hook"
NAME = "check.example.com"


class Recorder:
    """The webhook: records every review; answers `answer` (allowed + status + warnings), or HTTP `fail`."""

    def __init__(self) -> None:
        self.reviews: list[dict[str, Any]] = []
        self.answer: dict[str, Any] = {"allowed": True}
        self.fail = 0

    async def handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append(review)
        if self.fail:
            return web.Response(status=self.fail, text="boom")
        return web.json_response(
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], **self.answer},
            }
        )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedCluster, Recorder, ServingCert, int]]:
    cert = generate(service_names(HOOK_SVC, HOOK_NS))
    recorder = Recorder()
    app = web.Application()
    app.router.add_post("/validate", recorder.handle)
    server = HttpServer(app, "127.0.0.1", 0, ssl_context=cert.ssl_context()).start()
    with embedded_cluster(tmp_path_factory.mktemp("webhooks"), controllers=False) as cluster:
        run = _kubectl(cluster)
        run("create", "namespace", HOOK_NS)
        run("create", "namespace", "guarded")
        run("label", "namespace", "guarded", "guard=on")
        run("create", "namespace", "free")
        _apply(
            run,
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": HOOK_SVC, "namespace": HOOK_NS},
                "spec": {"ports": [{"name": "https", "port": 443, "targetPort": server.port}]},
            },
        )
        yield cluster, recorder, cert, server.port
    server.stop()


def _kubectl(cluster: EmbeddedCluster, token: str = "") -> Any:
    def run(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        extra = ["--token", token] if token else []
        proc = subprocess.run(
            ["kubectl", "--kubeconfig", str(cluster.kubeconfig), *extra, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc

    return run


def _apply(run: Any, obj: dict[str, Any]) -> None:
    run("apply", "-f", "-", input=yaml.safe_dump(obj))


def _configure(run: Any, cert: ServingCert, **overrides: Any) -> None:
    hook: dict[str, Any] = {
        "name": NAME,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "clientConfig": {
            "service": {"namespace": HOOK_NS, "name": HOOK_SVC, "path": "/validate"},
            "caBundle": base64.b64encode(cert.ca).decode(),
        },
        "rules": [
            {
                "operations": ["CREATE", "UPDATE", "DELETE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
                "scope": "Namespaced",
            }
        ],
        "namespaceSelector": {"matchLabels": {"guard": "on"}},
        "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
        "failurePolicy": "Fail",
        "timeoutSeconds": 2,
    }
    hook.update(overrides)
    _apply(
        run,
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "check"},
            "webhooks": [hook],
        },
    )


def _reset(recorder: Recorder) -> None:
    recorder.reviews.clear()
    recorder.answer, recorder.fail = {"allowed": True}, 0


def test_a_denial_reads_like_kube_apiserver_and_the_review_carries_the_request(world: Any) -> None:
    cluster, recorder, cert, _ = world
    run = _kubectl(cluster)
    _configure(run, cert)
    _reset(recorder)
    run("-n", "guarded", "create", "configmap", "c1", "--from-literal=a=1")
    create = recorder.reviews[-1]["request"]
    assert (create["operation"], create["name"], create["namespace"], create["oldObject"]) == ("CREATE", "c1", "guarded", None)
    assert create["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert create["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert create["options"]["kind"] == "CreateOptions" and create["object"]["data"] == {"a": "1"}

    recorder.answer = {"allowed": False, "status": {"message": "no edits of c1", "code": 403}, "warnings": ["edit c1 in Git"]}
    denied = run(
        "-n",
        "guarded",
        "patch",
        "configmap",
        "c1",
        "--type=merge",
        "-p",
        '{"data":{"a":"2"}}',
        "--as=alice",
        "--as-group=ops",
        check=False,
    )
    assert denied.returncode != 0
    assert 'admission webhook "check.example.com" denied the request: no edits of c1' in denied.stderr
    assert "Warning: edit c1 in Git" in denied.stderr
    patch = recorder.reviews[-1]["request"]
    assert patch["operation"] == "UPDATE" and patch["options"]["kind"] == "PatchOptions"
    assert patch["userInfo"] == {"username": "alice", "groups": ["ops", "system:authenticated"]}
    assert patch["oldObject"]["data"] == {"a": "1"} and patch["object"]["data"] == {"a": "2"}
    assert json.loads(run("-n", "guarded", "get", "configmap", "c1", "-o", "json").stdout)["data"] == {"a": "1"}

    recorder.answer = {"allowed": False}  # no status: 400 and "without explanation"
    raw = run("-n", "guarded", "delete", "configmap", "c1", "-v=6", check=False)
    assert 'admission webhook "check.example.com" denied the request without explanation' in raw.stderr
    assert recorder.reviews[-1]["request"]["operation"] == "DELETE"
    assert recorder.reviews[-1]["request"]["object"] is None
    assert recorder.reviews[-1]["request"]["oldObject"]["metadata"]["name"] == "c1"

    recorder.answer = {"allowed": False, "status": {"message": "dry"}}
    dry = run("-n", "guarded", "label", "configmap", "c1", "x=y", "--dry-run=server", check=False)
    assert "denied the request: dry" in dry.stderr and recorder.reviews[-1]["request"]["dryRun"] is True


def test_selectors_and_rules_decide_who_is_asked(world: Any) -> None:
    cluster, recorder, cert, _ = world
    run = _kubectl(cluster)
    _configure(run, cert)
    _reset(recorder)
    recorder.answer = {"allowed": False, "status": {"message": "no"}}
    run("-n", "free", "create", "configmap", "out-of-selector")  # namespaceSelector does not match
    asked = run("-n", "guarded", "create", "configmap", "asked", check=False)
    assert "denied the request: no" in asked.stderr and recorder.reviews[-1]["request"]["name"] == "asked"
    labelled = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "opt-out", "namespace": "guarded", "labels": {"skip": "yes"}},
    }
    _apply(run, labelled)  # objectSelector excludes it
    run("-n", "guarded", "create", "secret", "generic", "s1", "--from-literal=a=1")  # not in the rules
    names = [r["request"]["name"] for r in recorder.reviews]
    assert "opt-out" not in names and "s1" not in names and "out-of-selector" not in names


def test_call_failures_follow_the_failure_policy(world: Any) -> None:
    cluster, recorder, cert, port = world
    run = _kubectl(cluster)
    _reset(recorder)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    _configure(
        run, cert, clientConfig={"url": f"https://127.0.0.1:{closed}/validate", "caBundle": base64.b64encode(cert.ca).decode()}
    )
    down = run("-n", "guarded", "create", "configmap", "down", check=False)
    assert down.returncode != 0
    assert (
        'Internal error occurred: failed calling webhook "check.example.com": Post '
        f'"https://127.0.0.1:{closed}/validate?timeout=2s": dial tcp 127.0.0.1:{closed}: connect: '
        "connection refused"
    ) in down.stderr
    _configure(
        run,
        cert,
        failurePolicy="Ignore",
        clientConfig={"url": f"https://127.0.0.1:{closed}/validate", "caBundle": base64.b64encode(cert.ca).decode()},
    )
    run("-n", "guarded", "create", "configmap", "ignored")  # fails open

    other = generate(service_names(HOOK_SVC, HOOK_NS))  # a caBundle that did not sign the server's certificate
    _configure(
        run,
        cert,
        clientConfig={
            "service": {"namespace": HOOK_NS, "name": HOOK_SVC, "path": "/validate"},
            "caBundle": base64.b64encode(other.ca).decode(),
        },
    )
    bad_ca = run("-n", "guarded", "create", "configmap", "bad-ca", check=False)
    assert (
        'failed calling webhook "check.example.com": Post "https://hook.hooks.svc:443/validate?timeout=2s": '
        "tls: failed to verify certificate: x509: "
    ) in bad_ca.stderr
    assert recorder.reviews == []

    _configure(run, cert)
    recorder.fail = 500
    broken = run("-n", "guarded", "create", "configmap", "broken", check=False)
    assert 'failed calling webhook "check.example.com": an error on the server ("boom")' in broken.stderr
    _reset(recorder)


def test_a_configuration_is_validated_and_never_sent_to_webhooks(world: Any) -> None:
    cluster, recorder, cert, _ = world
    run = _kubectl(cluster)
    bad = run(
        "apply",
        "-f",
        "-",
        check=False,
        input=yaml.safe_dump(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "bad"},
                "webhooks": [
                    {
                        "name": "bad.example.com",
                        "sideEffects": "Some",
                        "admissionReviewVersions": ["v1"],
                        "clientConfig": {"url": "https://127.0.0.1:1/"},
                    }
                ],
            }
        ),
    )
    assert 'webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"' in bad.stderr
    _configure(
        run,
        cert,
        rules=[{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}],
        namespaceSelector={},
    )
    _reset(recorder)
    recorder.answer = {"allowed": False, "status": {"message": "locked"}}
    run("delete", "validatingwebhookconfiguration", "check")  # exempt: a webhook cannot lock itself in
    assert recorder.reviews == []


def test_a_dry_run_delete_is_admitted_as_dry_run_and_deletes_nothing(world: Any) -> None:
    """Invariant: `kubectl delete --dry-run=server` (dryRun in the DeleteOptions body) still calls the webhooks, with
    dryRun true, and the object stays."""
    cluster, recorder, cert, _ = world
    run = _kubectl(cluster)
    _configure(run, cert)
    _reset(recorder)
    run("-n", "guarded", "create", "configmap", "dry-del", "--from-literal=a=1")
    out = run("-n", "guarded", "delete", "configmap", "dry-del", "--dry-run=server").stdout
    assert "(server dry run)" in out
    review = recorder.reviews[-1]["request"]
    assert (review["operation"], review["dryRun"], review["options"]["dryRun"]) == ("DELETE", True, ["All"])
    assert json.loads(run("-n", "guarded", "get", "configmap", "dry-del", "-o", "json").stdout)["data"] == {"a": "1"}
