"""Debian packages for the test images: `apt-get download` into a cache (SHA256 checked), `dpkg -x` once each.

Nothing is installed: the machine's apt lists name the versions (`apt-get download --print-uris`), the .deb files
land in `<cache>/debs`, and each is unpacked under `<cache>/unpacked/<deb file name>`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# busybox's shell and tools, bash (KubeDirector runs `/bin/bash -c`), and GNU cp, find and tar with the libraries
# they link: KubeDirector's init container runs `cp --parent -ax DIRS /mnt` and gitops-kd's (gitops_kd/render/
# init_script.py) `find -writable ... -print0 | tar --null -T -`, which busybox's cp, find and tar refuse.
PACKAGES = (
    "busybox-static",
    "bash-static",
    "coreutils",
    "findutils",
    "tar",
    "libc6",
    "libacl1",
    "libattr1",
    "libselinux1",
    "libpcre2-8-0",
)
_URI = re.compile(r"^'(?P<uri>[^']+)' (?P<file>\S+) (?P<size>\d+) SHA256:(?P<sha>[0-9a-f]{64})$")
RESOLVED = "resolved.json"  # what the last fetch resolved, under which apt lists
_APT = ("apt-get", "-q", "-o", "APT::Sandbox::User=root")  # the cache is root's: apt's _apt user cannot write it


class BuildError(Exception):
    """An image cannot be built: says which step and why."""


@dataclass(frozen=True)
class Package:
    """One downloaded and unpacked Debian package."""

    name: str
    deb: Path
    sha256: str
    root: Path  # the unpacked tree


def cache_root() -> Path:
    """~/.cache/gitops-kd/realnode/images (XDG_CACHE_HOME respected), where the debs and archives are kept."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "gitops-kd" / "realnode" / "images"


def _print_uris(names: tuple[str, ...]) -> str:
    done = subprocess.run([*_APT, "download", "--print-uris", *names], capture_output=True, text=True, timeout=120)
    if done.returncode != 0 and os.geteuid() == 0:  # empty apt lists on a fresh machine: read them once
        subprocess.run([*_APT, "-o", "DPkg::Lock::Timeout=600", "update"], capture_output=True, timeout=600)
        done = subprocess.run([*_APT, "download", "--print-uris", *names], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise BuildError(
            f"apt-get download --print-uris {' '.join(names)} failed ({done.stderr.strip()[-400:]}); "
            "these Debian packages must be known to apt (run apt-get update)"
        )
    return done.stdout


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _lists_stamp() -> list[list[object]]:
    """The apt lists' names, sizes and mtimes: while they stay, apt resolves ``names`` to the same files."""
    lists = Path("/var/lib/apt/lists")
    files = sorted(p for p in lists.iterdir() if p.is_file()) if lists.is_dir() else []
    return [[p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in files]


def _saved(cache: Path, names: tuple[str, ...], stamp: list[list[object]]) -> dict[str, Package] | None:
    """The packages resolved and unpacked by an earlier fetch under the same apt lists, or None."""
    try:
        saved = json.loads((cache / "debs" / RESOLVED).read_text())
    except (OSError, ValueError):
        return None
    if saved.get("names") != list(names) or saved.get("stamp") != stamp:
        return None
    out = {}
    for name, (file, sha) in saved["packages"].items():
        root = cache / "unpacked" / file
        try:
            if (root / ".unpacked").read_text().strip() != sha:
                return None
        except OSError:
            return None
        out[name] = Package(name, cache / "debs" / file, sha, root)
    return out


def fetch(cache: Path, names: tuple[str, ...] = PACKAGES) -> dict[str, Package]:
    """Download (when missing) and unpack ``names``; package name -> Package, in the order given. Under unchanged
    apt lists a later call reads what the first one resolved (apt-get takes seconds to answer)."""
    debs, unpacked = cache / "debs", cache / "unpacked"
    debs.mkdir(parents=True, exist_ok=True)
    stamp = _lists_stamp()
    known = _saved(cache, names, stamp)
    if known is not None:
        return known
    wanted: dict[str, tuple[str, str]] = {}  # deb file name -> (package, sha256)
    for line in _print_uris(names).splitlines():
        match = _URI.match(line.strip())
        if match:
            name = match["file"].split("_", 1)[0]
            wanted[match["file"]] = (name, match["sha"])
    missing = [name for name in names if name not in {pkg for pkg, _ in wanted.values()}]
    if missing:
        raise BuildError(f"apt-get names no .deb for {', '.join(missing)}")
    stale = [f for f, (_, sha) in wanted.items() if not (debs / f).is_file() or _sha256(debs / f) != sha]
    if stale:
        done = subprocess.run(
            [*_APT, "download", *(wanted[f][0] + "=" + _version_of(f) for f in stale)],
            cwd=debs,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise BuildError(f"apt-get download failed: {done.stderr.strip()[-400:]}")
    out: dict[str, Package] = {}
    for file, (name, sha) in wanted.items():
        deb = debs / file
        if not deb.is_file() or _sha256(deb) != sha:
            raise BuildError(f"{deb}: missing or not the SHA256 apt names ({sha}) after apt-get download")
        root = unpacked / file
        if not (root / ".unpacked").is_file():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            done = subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                raise BuildError(f"dpkg-deb -x {deb}: {done.stderr.strip()[-400:]}")
            (root / ".unpacked").write_text(sha + "\n")
        out[name] = Package(name, deb, sha, root)
    resolved = {name: [out[name].deb.name, out[name].sha256] for name in names}
    (debs / RESOLVED).write_text(json.dumps({"names": list(names), "stamp": stamp, "packages": resolved}))
    return {name: out[name] for name in names}


def _version_of(deb_file: str) -> str:
    """The version in a .deb file name (`name_1%3a1.35.0-4_amd64.deb` -> `1:1.35.0-4`)."""
    return deb_file.split("_")[1].replace("%3a", ":")
