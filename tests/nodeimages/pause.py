"""The sandbox image's program: Kubernetes' own pause (build/pause/linux/pause.c of the v1.20.2 tree scripts/realk8s
unpacks, built with `gcc -static`), or, without that tree or a static C toolchain, a busybox script that sleeps
until SIGTERM/SIGINT. `inputs()` names what the program is made from, for the image's cache key."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

PAUSE_TAG = "3.4"  # the tree's build/pause/Makefile TAG at v1.20.2
BUSYBOX_PAUSE = (
    b"#!/bin/sh\n# The sandbox's process: waits until SIGTERM or SIGINT.\n"
    b"trap 'exit 0' TERM INT\nwhile :; do sleep 3600 & wait $!; done\n"
)
LIBC_A = Path("/usr/lib/x86_64-linux-gnu/libc.a")


def source() -> Path:
    """Where scripts/realk8s unpacks pause.c (present once that script has run)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "gitops-kd/realk8s/v1.20.2/src/kubernetes/build/pause/linux/pause.c"


def _gcc_version() -> str | None:
    try:
        done = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def inputs() -> dict[str, str]:
    """What the program is made from: pause.c's and libc.a's SHA256 and gcc's version, or the busybox script's."""
    gcc = _gcc_version()
    if source().is_file() and LIBC_A.is_file() and gcc:
        return {
            "pause.c": hashlib.sha256(source().read_bytes()).hexdigest(),
            "libc.a": hashlib.sha256(LIBC_A.read_bytes()).hexdigest(),
            "gcc": gcc,
        }
    return {"busybox-script": hashlib.sha256(BUSYBOX_PAUSE).hexdigest()}


def program() -> bytes:
    """The pause binary (stripped, static), or the busybox script when it cannot be compiled here."""
    if "pause.c" not in inputs():
        return BUSYBOX_PAUSE
    with tempfile.TemporaryDirectory(prefix="pause-") as tmp:
        (Path(tmp) / "pause.c").write_bytes(source().read_bytes())
        cmd = ["gcc", "-Os", "-Wall", "-Werror", "-static", "-s", f"-DVERSION=v{PAUSE_TAG}-gitops-kd", "pause.c", "-o", "pause"]
        done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"gcc -static pause.c failed: {done.stderr.strip()[-400:]}")
        return (Path(tmp) / "pause").read_bytes()
