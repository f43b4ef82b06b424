"""Build the real node's test images offline into the cache, keyed by content, and print `ref=PATH` per archive.

An archive is rebuilt only when what it is made from changes: the Debian packages (their SHA256), this package's
source files, the KDApps the hello facts are read from, and the pause program's inputs. Builds are serialised
by a lock file in the cache, so parallel test workers share one build.

Usage: scripts/realnode-images [--force]   (or python -m tests.nodeimages.build; --force rebuilds every archive)
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from tests.nodeimages import archive, debs, pause, rootfs
from tests.nodeimages.facts import HELLO_KDAPPS, IMAGE_PATH, PAUSE_REF, TEMPLATE, ImageFacts, images

CREATED_BY = "gitops-kd tests/nodeimages"
# The modules whose code shapes an archive: a change of one rebuilds every archive.
BUILDER = ("archive.py", "build.py", "debs.py", "facts.py", "hello.py", "layer.py", "pause.py", "rootfs.py")


def _sources_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent / name for name in BUILDER):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for rel in HELLO_KDAPPS:
        digest.update(rel.encode() + b"\0" + (TEMPLATE / rel).read_bytes())
    return digest.hexdigest()


def archive_path(out: Path, image: ImageFacts, key: str) -> Path:
    """<out>/<repo with / as _>_<tag>-<first 16 hex of the key>.tar"""
    return out / f"{image.ref.replace('/', '_').replace(':', '_')}-{key[:16]}.tar"


def _config(image: ImageFacts, source: str) -> dict[str, object]:
    config: dict[str, object] = {"Entrypoint": list(image.entrypoint), "Env": [f"PATH={IMAGE_PATH}"], "WorkingDir": "/"}
    if image.ports:
        config["ExposedPorts"] = {f"{p}/tcp": {} for p in image.ports}
    config["Labels"] = {"gitops-kd.io/built-by": CREATED_BY, "gitops-kd.io/source": source}
    return config


def build_all(out: Path | None = None, *, cache: Path | None = None, force: bool = False) -> dict[str, Path]:
    """Build (or find) every image of facts.images(); ref -> archive path. ``out``: where archives go (default:
    the cache); ``cache``: where Debian packages are downloaded and unpacked (default: debs.cache_root())."""
    cache = cache or debs.cache_root()
    out = out or cache
    out.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        packages = debs.fetch(cache)
        common = {"sources": _sources_digest(), "debs": {name: p.sha256 for name, p in packages.items()}}
        built: dict[str, Path] = {}
        for image in images():
            extra = pause.inputs() if image.ref == PAUSE_REF else {}
            key = hashlib.sha256(json.dumps({**common, "image": asdict(image), "extra": extra}, sort_keys=True).encode())
            path = archive_path(out, image, key.hexdigest())
            if force or not path.is_file():
                started = time.monotonic()
                if image.ref == PAUSE_REF:
                    program = pause.program()
                    tree = rootfs.pause_tree(program, packages, image)
                    source = "busybox script" if program.startswith(b"#!") else f"pause.c {pause.PAUSE_TAG} (v1.20.2 tree)"
                else:
                    tree = rootfs.hello_tree(packages, image)
                    source = f"repo-template/{image.kdapp}"
                layer = tree.tar()
                config = archive.image_config(layer, _config(image, source), CREATED_BY)
                archive.write_atomically(path, archive.archive_bytes(image.ref, layer, config))
                print(f"realnode-images: built {image.ref} in {time.monotonic() - started:.1f}s: {path}", file=sys.stderr)
            for old in out.glob(archive_path(out, image, "*").name):  # earlier builds of this image
                if old != path:
                    old.unlink()
            built[image.ref] = path
        return built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/realnode-images", description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild every archive even when cached")
    args = parser.parse_args(argv)
    try:
        built = build_all(force=args.force)
    except (debs.BuildError, RuntimeError) as exc:
        print(f"realnode-images: FAILED: {exc}", file=sys.stderr)
        return 1
    for ref, path in built.items():
        print(f"{ref}={path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
