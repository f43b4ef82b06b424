"""The registry of gate probe kinds: stanza key -> the kind's module (exactly one per gate)."""

from __future__ import annotations

from collections.abc import Mapping

from gitops_kd.steps import exec_probe, http_get, tcp_socket
from gitops_kd.steps.probe import ProbeKind

PROBES: Mapping[str, ProbeKind] = {kind.KEY: kind for kind in (exec_probe, http_get, tcp_socket)}


def one_of() -> str:
    """The probe keys as a reader lists them: "exec or httpGet", "exec, httpGet or tcpSocket"."""
    keys = list(PROBES)
    return keys[0] if len(keys) == 1 else f"{', '.join(keys[:-1])} or {keys[-1]}"
