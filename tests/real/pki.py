"""Test PKI for a loopback control plane, made with the openssl command: a CA, serving and client certs, SA keys."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pair:
    """A certificate and its private key (PEM files)."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """Every file the control plane needs; all under one folder."""

    ca: Pair
    apiserver: Pair
    admin: Pair
    controller_manager: Pair
    kubelet_client: Pair
    kubelet_serving: Pair
    sa_key: Path
    sa_pub: Path


def _openssl(folder: Path, *args: str) -> None:
    done = subprocess.run(["openssl", *args], cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args[:2])} failed: {done.stderr.strip()}")


def _leaf(folder: Path, ca: Pair, name: str, subject: str, usage: str, sans: str = "") -> Pair:
    """A key and a cert signed by `ca`; usage is serverAuth or clientAuth; sans like 'IP:127.0.0.1,DNS:x'."""
    key, csr, crt, ext = (folder / f"{name}.{s}" for s in ("key", "csr", "crt", "ext"))
    lines = ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment", f"extendedKeyUsage={usage}"] + (
        [f"subjectAltName={sans}"] if sans else []
    )
    ext.write_text("\n".join(lines) + "\n")
    _openssl(folder, "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", subject)
    _openssl(
        folder,
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(ca.cert),
        "-CAkey",
        str(ca.key),
        "-CAcreateserial",
        "-days",
        "30",
        "-sha256",
        "-extfile",
        str(ext),
        "-out",
        str(crt),
    )
    return Pair(crt, key)


def make_pki(folder: Path) -> Pki:
    """Write the CA, the certs and the service-account key pair into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    ca = Pair(folder / "ca.crt", folder / "ca.key")
    _openssl(
        folder,
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(ca.key),
        "-out",
        str(ca.cert),
        "-days",
        "30",
        "-subj",
        "/CN=gitops-kd-test-ca",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    )
    server_sans = (
        "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
    )
    sa_key, sa_pub = folder / "sa.key", folder / "sa.pub"
    _openssl(folder, "genrsa", "-out", str(sa_key), "2048")
    _openssl(folder, "rsa", "-in", str(sa_key), "-pubout", "-out", str(sa_pub))
    return Pki(
        ca=ca,
        apiserver=_leaf(folder, ca, "apiserver", "/CN=kube-apiserver", "serverAuth", server_sans),
        admin=_leaf(folder, ca, "admin", "/O=system:masters/CN=admin", "clientAuth"),
        controller_manager=_leaf(folder, ca, "controller-manager", "/CN=system:kube-controller-manager", "clientAuth"),
        kubelet_client=_leaf(folder, ca, "apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet", "clientAuth"),
        kubelet_serving=_leaf(folder, ca, "kubelet", "/CN=system:node:sim-node", "serverAuth", "IP:127.0.0.1,DNS:localhost"),
        sa_key=sa_key,
        sa_pub=sa_pub,
    )


def node_pairs(folder: Path, ca: Pair, node: str, node_ip: str) -> tuple[Pair, Pair]:
    """A real kubelet's two pairs, signed by ``ca``: its client identity (CN system:node:NODE, O system:nodes) and
    its serving cert with the node IP as SAN (kube-apiserver checks it when it calls the kubelet: exec, logs)."""
    folder.mkdir(parents=True, exist_ok=True)
    client = _leaf(folder, ca, "kubelet-client", f"/O=system:nodes/CN=system:node:{node}", "clientAuth")
    serving = _leaf(folder, ca, "kubelet-serving", f"/CN=system:node:{node}", "serverAuth", f"IP:{node_ip},DNS:{node}")
    return client, serving
