"""Self-signed TLS material for the embedded API server: a CA and a server cert for 127.0.0.1/localhost."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class TlsMaterial:
    """PEM bytes of the CA certificate and of the server certificate and key."""

    ca_cert: bytes
    server_cert: bytes
    server_key: bytes

    def server_context(self, workdir: Path) -> ssl.SSLContext:
        """An SSLContext serving the server cert (files are written under `workdir`)."""
        workdir.mkdir(parents=True, exist_ok=True)
        cert, key = workdir / "apiserver.crt", workdir / "apiserver.key"
        cert.write_bytes(self.server_cert + self.ca_cert)
        key.write_bytes(self.server_key)
        key.chmod(0o600)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(cert), str(key))
        return ctx


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def generate(valid_days: int = 3650, *, common_name: str = "kube-apiserver") -> TlsMaterial:
    """Create a fresh CA and a server certificate (for 127.0.0.1 and localhost) signed by it."""
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=valid_days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("gitops-kd-sim-ca"))
        .issuer_name(_name("gitops-kd-sim-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
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
    sans = [
        x509.DNSName("localhost"),
        x509.DNSName("kubernetes"),
        x509.DNSName("kubernetes.default"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return TlsMaterial(
        ca_cert=ca.public_bytes(pem),
        server_cert=cert.public_bytes(pem),
        server_key=key.private_bytes(pem, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()),
    )


def load_or_generate(state_dir: Path | None) -> TlsMaterial:
    """Reuse the material saved in `state_dir/pki` (so kubeconfigs stay valid across restarts), else generate."""
    if state_dir is not None:
        pki = state_dir / "pki"
        files = [pki / "ca.crt", pki / "server.crt", pki / "server.key"]
        if all(f.is_file() for f in files):
            return TlsMaterial(*(f.read_bytes() for f in files))
        material = generate()
        pki.mkdir(parents=True, exist_ok=True)
        for f, data in zip(files, (material.ca_cert, material.server_cert, material.server_key)):
            f.write_bytes(data)
        files[2].chmod(0o600)
        return material
    return generate()
