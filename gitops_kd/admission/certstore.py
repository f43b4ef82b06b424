"""The serving certificate in a Secret (ca.crt, tls.crt, tls.key) and the caBundle of the webhook configuration.

`ensure_cert` reads the Secret, or generates and writes it when absent, unreadable, expiring within
certs.RENEW_BEFORE_DAYS or not naming the Service (a replica that loses the create race reads the winner's).
`sync_ca_bundle` sets clientConfig.caBundle of the configuration's webhooks that call our Service, unless
cert-manager's cainjector owns it (the cert-manager.io/inject-ca-from annotation): then it does nothing.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

from kubernetes.client.exceptions import ApiException

from gitops_kd.admission.certs import ServingCert, generate, service_names
from kubeplumb.rest import RestClient

log = logging.getLogger(__name__)
VWC = "admissionregistration.k8s.io/v1", "validatingwebhookconfigurations"
CERT_MANAGER_ANNOTATION = "cert-manager.io/inject-ca-from"


def _from_secret(secret: dict[str, Any] | None) -> ServingCert | None:
    data = (secret or {}).get("data") or {}
    try:
        return ServingCert(*(base64.b64decode(data[k]) for k in ("ca.crt", "tls.crt", "tls.key")))
    except (KeyError, ValueError):
        return None


def ensure_cert(rest: RestClient, namespace: str, secret: str, service: str) -> ServingCert:
    """The serving certificate from Secret `secret`, (re)generated first when needed."""
    names = service_names(service, namespace)
    for _ in range(3):
        current = rest.get_or_none("v1", "secrets", namespace, secret)
        cert = _from_secret(current)
        if cert is not None and not cert.needs_renewal(names):
            return cert
        fresh = generate(names)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": secret, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "gitops-kd"}},
            "data": {
                k: base64.b64encode(v).decode()
                for k, v in (("ca.crt", fresh.ca), ("tls.crt", fresh.cert), ("tls.key", fresh.key))
            },
        }
        try:
            if current is None:
                rest.create("v1", "secrets", namespace, body)
            else:
                body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                rest.replace("v1", "secrets", namespace, secret, body)
            log.info("admission: wrote a new serving certificate to Secret %s/%s for %s", namespace, secret, names[2])
            return fresh
        except ApiException as exc:
            if exc.status not in (409,):
                raise
    raise RuntimeError(f"admission: Secret {namespace}/{secret} kept changing while writing the certificate")


def sync_ca_bundle(rest: RestClient, config: str, ca: bytes, service: str, namespace: str) -> bool:
    """Point the caBundle of `config`'s webhooks that call Service `namespace/service` at `ca`; True if changed.
    A write that raced another replica's (its resourceVersion test failed) is redone on the object read again."""
    for _ in range(3):
        try:
            return _sync_ca_bundle(rest, config, ca, service, namespace)
        except ApiException as exc:
            if exc.status not in (409, 422):
                raise
    raise RuntimeError(f"admission: ValidatingWebhookConfiguration {config} kept changing while writing its caBundle")


def _sync_ca_bundle(rest: RestClient, config: str, ca: bytes, service: str, namespace: str) -> bool:
    vwc = rest.get_or_none(*VWC, None, config)
    if vwc is None:
        return False
    if CERT_MANAGER_ANNOTATION in ((vwc.get("metadata") or {}).get("annotations") or {}):
        return False
    bundle = base64.b64encode(ca).decode()
    ops = []
    for i, hook in enumerate(vwc.get("webhooks") or []):
        svc = (hook.get("clientConfig") or {}).get("service") or {}
        if (svc.get("name"), svc.get("namespace")) == (service, namespace) and hook["clientConfig"].get("caBundle") != bundle:
            ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle})
    if not ops:
        return False
    ops.insert(0, {"op": "test", "path": "/metadata/resourceVersion", "value": vwc["metadata"]["resourceVersion"]})
    rest.patch(*VWC, None, config, ops, patch_type="json")
    log.info("admission: caBundle of ValidatingWebhookConfiguration %s updated", config)
    return True
