"""The serving certificate in its Secret and the caBundle upkeep, against the embedded API server: generated once
and reused, regenerated when it does not name the Service, the caBundle set only on our webhooks and left to
cert-manager when its annotation is there."""

from __future__ import annotations

import base64
import ssl
from collections.abc import Iterator

import pytest

from gitops_kd.admission.certs import generate, service_names
from gitops_kd.admission.certstore import CERT_MANAGER_ANNOTATION, VWC, ensure_cert, sync_ca_bundle
from kubeplumb.rest import RestClient
from tests.kdcluster import embedded_cluster

NS, SVC, SECRET = "gitops-kd-system", "gitops-kd-admission", "gitops-kd-admission-tls"


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestClient]:
    with embedded_cluster(tmp_path_factory.mktemp("certs"), controllers=False) as cluster:
        client = RestClient(cluster.api_client())
        client.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        yield client


def _hook(name: str, service: str) -> dict:
    return {
        "name": name,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"namespace": NS, "name": service, "path": "/admission"}},
    }


def test_the_certificate_is_generated_once_and_names_the_service(rest: RestClient) -> None:
    first = ensure_cert(rest, NS, SECRET, SVC)
    assert ensure_cert(rest, NS, SECRET, SVC) == first  # read back, not regenerated
    assert not first.needs_renewal(service_names(SVC, NS))
    ctx = ssl.create_default_context(cadata=first.ca.decode())  # the CA verifies the serving certificate
    assert ctx.get_ca_certs()
    secret = rest.get("v1", "secrets", NS, SECRET)
    assert secret["type"] == "kubernetes.io/tls" and set(secret["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    # a certificate for other names (the Service was renamed) is replaced
    other = generate(service_names("old-name", NS))
    secret["data"] = {
        k: base64.b64encode(v).decode() for k, v in (("ca.crt", other.ca), ("tls.crt", other.cert), ("tls.key", other.key))
    }
    rest.replace("v1", "secrets", NS, SECRET, secret)
    renewed = ensure_cert(rest, NS, SECRET, SVC)
    assert renewed not in (first, other) and not renewed.needs_renewal(service_names(SVC, NS))


def test_the_cabundle_is_set_on_our_webhooks_only_and_left_to_cert_manager(rest: RestClient) -> None:
    cert = ensure_cert(rest, NS, SECRET, SVC)
    assert not sync_ca_bundle(rest, "gitops-kd", cert.ca, SVC, NS)  # no configuration yet: nothing to do
    rest.create(
        *VWC,
        None,
        {
            "apiVersion": VWC[0],
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "gitops-kd"},
            "webhooks": [_hook("a.gitops-kd.io", SVC), _hook("b.example.com", "someone-else")],
        },
    )
    assert sync_ca_bundle(rest, "gitops-kd", cert.ca, SVC, NS)
    ours, theirs = rest.get(*VWC, None, "gitops-kd")["webhooks"]
    assert base64.b64decode(ours["clientConfig"]["caBundle"]) == cert.ca and "caBundle" not in theirs["clientConfig"]
    assert not sync_ca_bundle(rest, "gitops-kd", cert.ca, SVC, NS)  # already current
    rest.patch(*VWC, None, "gitops-kd", {"metadata": {"annotations": {CERT_MANAGER_ANNOTATION: f"{NS}/cert"}}})
    assert not sync_ca_bundle(rest, "gitops-kd", generate(service_names(SVC, NS)).ca, SVC, NS)
    assert base64.b64decode(rest.get(*VWC, None, "gitops-kd")["webhooks"][0]["clientConfig"]["caBundle"]) == cert.ca
