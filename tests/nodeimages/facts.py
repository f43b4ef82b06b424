"""The real node's test images in one place: references, entrypoints, ports per role, persisted dirs and files.

The hello images' ports and persisted directories are read from the KDApps that name them (repo-template's
apps/hello.yaml for 1.0.0, examples/hello-2.0.0.yaml for 2.0.0), never restated; the files each version carries
(HELLO_1, HELLO_2) are the ones the simulated images carry too (tests/e2e/harness.py imports them from here).
The hook, gate and migration commands those KDApps declare are inline `/bin/sh -c` commands: the images carry
the tools they use (sh, cp, grep, echo), no script files.

Usage::

    for image in images():                       # every image the real node needs, pause first
        print(image.ref, image.entrypoint, image.ports)
    hello("2.0.0").role_ports["worker"]          # (8081,)
    containerd_name("gitops-kd/hello:1.0.0")     # "docker.io/gitops-kd/hello:1.0.0": what `ctr images ls` shows
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "repo-template"
# The KDApps whose defaultImageRepoTag the real node must be able to run, as repo-template paths.
HELLO_KDAPPS = ("apps/hello.yaml", "examples/hello-2.0.0.yaml")

# What each hello version carries (absolute path -> content); the simulated images carry the same files. On the
# real image /opt/hello/bin/hello is the program itself (HELLO_PROGRAM), not the placeholder line.
HELLO_1 = {
    "/etc/hello/version": "1.0.0\n",
    "/var/lib/hello/data": "data-1.0.0\n",
    "/opt/hello/cache/index": "cache-1.0.0\n",
    "/opt/hello/bin/hello": "hello 1.0.0\n",
}
HELLO_2 = {
    "/etc/hello/version": "2.0.0\n",
    "/var/lib/hello/data": "data-2.0.0\n",
    "/var/lib/hello/new-in-2": "yes\n",
    "/opt/hello/cache/index": "cache-2.0.0\n",
    "/opt/hello/bin/hello": "hello 2.0.0\n",
}
HELLO_FILES = {"1.0.0": HELLO_1, "2.0.0": HELLO_2}
HELLO_PROGRAM = "/opt/hello/bin/hello"
HELLO_WWW = "/opt/hello/www"  # busybox httpd's home: index.html (the version) and cgi-bin/
HELLO_PORTS_ENV = "HELLO_PORTS"  # the ports to listen on instead of the KDApp's (space-separated), for tests
PAUSE_REF = "gitops-kd/pause:1"  # the pod sandbox image (containerd's sandbox_image)
PAUSE_PROGRAM = "/pause"
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class ImageFacts:
    """One image of the real node: what pods name it, what it runs, the ports it serves and the files it has."""

    ref: str
    entrypoint: tuple[str, ...]
    version: str = ""
    role_ports: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # KDApp role -> its services' ports
    persist_dirs: tuple[str, ...] = ()  # the KDApp's defaultPersistDirs (KubeDirector adds /etc)
    files: Mapping[str, str] = field(default_factory=dict)
    kdapp: str = ""  # the repo-template file declaring it

    @property
    def ports(self) -> tuple[int, ...]:
        """Every port the program listens on: those of all roles' services (one program serves every role)."""
        return tuple(sorted({p for ports in self.role_ports.values() for p in ports}))


def containerd_name(ref: str) -> str:
    """The name containerd gives an imported image (and the kubelet asks for): the Docker Hub default prefix."""
    first = ref.split("/", 1)[0]
    if "/" in ref and ("." in first or ":" in first or first == "localhost"):
        return ref
    return f"docker.io/{ref}" if "/" in ref else f"docker.io/library/{ref}"


def _kdapp_ports(spec: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    ports = {s["id"]: int(s["endpoint"]["port"]) for s in spec.get("services") or () if s.get("endpoint")}
    by_role = {r["roleID"]: r.get("serviceIDs") or [] for r in (spec.get("config") or {}).get("roleServices") or ()}
    return {role["id"]: tuple(sorted(ports[s] for s in by_role.get(role["id"], ()) if s in ports)) for role in spec["roles"]}


def hello_images() -> tuple[ImageFacts, ...]:
    """The hello images, one per KDApp of HELLO_KDAPPS, with the facts read from that KDApp."""
    out = []
    for rel in HELLO_KDAPPS:
        spec = yaml.safe_load((TEMPLATE / rel).read_text(encoding="utf-8"))["spec"]
        version = str(spec["version"])
        out.append(
            ImageFacts(
                ref=str(spec["defaultImageRepoTag"]),
                entrypoint=(HELLO_PROGRAM,),
                version=version,
                role_ports=_kdapp_ports(spec),
                persist_dirs=tuple(spec.get("defaultPersistDirs") or ()),
                files=HELLO_FILES[version],
                kdapp=rel,
            )
        )
    return tuple(out)


def hello(version: str) -> ImageFacts:
    """The hello image of ``version``."""
    return next(i for i in hello_images() if i.version == version)


def pause() -> ImageFacts:
    """The pod sandbox image: a program that waits until SIGTERM/SIGINT."""
    return ImageFacts(ref=PAUSE_REF, entrypoint=(PAUSE_PROGRAM,))


def images() -> tuple[ImageFacts, ...]:
    """Every image the real node needs: the sandbox image, then the hello versions."""
    return (pause(), *hello_images())
