"""A docker-archive image tarball, the format `ctr -n k8s.io image import` reads: manifest.json, the config JSON
(named by its SHA256, as `docker save` names it) with rootfs.diff_ids = the SHA256 of each layer tar, and the
layer tar. Written byte for byte the same from the same layer and config."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ARCH, OS = "amd64", "linux"


def image_config(layer: bytes, config: Mapping[str, Any], created_by: str) -> bytes:
    """The image config JSON of a one-layer image (``config``: Entrypoint, Cmd, Env, ExposedPorts, Labels, ...)."""
    return json.dumps(
        {
            "architecture": ARCH,
            "os": OS,
            "created": "1970-01-01T00:00:00Z",
            "config": dict(config),
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
            "history": [{"created": "1970-01-01T00:00:00Z", "created_by": created_by}],
        },
        sort_keys=True,
        separators=(",", ":"),
    ).encode()


def archive_bytes(ref: str, layer: bytes, config: bytes) -> bytes:
    """The archive: manifest.json tagging the image ``ref``, the config, and the layer as <diff id>/layer.tar."""
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    layer_name = hashlib.sha256(layer).hexdigest() + "/layer.tar"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [ref], "Layers": [layer_name]}], separators=(",", ":")).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in (
            (layer_name.split("/")[0], None),
            (layer_name, layer),
            (config_name, config),
            ("manifest.json", manifest),
        ):
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "root", "root"
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.mode, info.size = 0o644, len(data)
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def write_atomically(path: Path, data: bytes) -> Path:
    """Write ``path`` through a temp file and a rename: a reader never sees half an archive."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return path
