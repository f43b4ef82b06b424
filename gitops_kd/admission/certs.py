"""The admission webhook's serving certificate: a self-signed CA and a server certificate for the Service's names."""

from __future__ import annotations

import datetime
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 365
RENEW_BEFORE_DAYS = 30


@dataclass(frozen=True)
class ServingCert:
    """PEM bytes: the CA (the caBundle), the server certificate and its key (the Secret's ca.crt, tls.crt, tls.key)."""

    ca: bytes
    cert: bytes
    key: bytes

    def ssl_context(self) -> ssl.SSLContext:
        """A server SSLContext for this certificate."""
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.load_into(ctx)
        return ctx

    def load_into(self, ctx: ssl.SSLContext) -> None:
        """Serve this certificate from `ctx` (new connections; a renewal reloads the running server's context).
        ssl loads chains from files only: they go through a private temp dir."""
        with tempfile.TemporaryDirectory(prefix="gitops-kd-admission-") as tmp:
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(self.cert)
            key.touch(0o600)
            key.write_bytes(self.key)
            ctx.load_cert_chain(str(cert), str(key))

    def needs_renewal(self, dns_names: list[str], now: datetime.datetime | None = None) -> bool:
        """True when the certificate expires within RENEW_BEFORE_DAYS or does not name every one of `dns_names`."""
        now = now or datetime.datetime.now(datetime.UTC)
        try:
            cert = x509.load_pem_x509_certificate(self.cert)
            x509.load_pem_x509_certificate(self.ca)
            sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except (ValueError, x509.ExtensionNotFound):
            return True
        named = set(sans.get_values_for_type(x509.DNSName))
        return cert.not_valid_after_utc - now < datetime.timedelta(days=RENEW_BEFORE_DAYS) or not set(dns_names) <= named


def service_names(service: str, namespace: str) -> list[str]:
    """The names the API server may dial: NAME.NAMESPACE.svc (what it verifies) and the shorter and longer forms."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def generate(dns_names: list[str], valid_days: int = VALID_DAYS) -> ServingCert:
    """A fresh CA and a server certificate for `dns_names` (the first is the common name) signed by it."""
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=valid_days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("gitops-kd-admission-ca"))
        .issuer_name(_name("gitops-kd-admission-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_names[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return ServingCert(
        ca=ca.public_bytes(pem),
        cert=cert.public_bytes(pem),
        key=key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
