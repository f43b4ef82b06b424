"""The image archives are what `ctr image import` reads (manifest, config named by its digest, diff_ids = the layer
tars' SHA256), are built byte for byte the same twice, are reused from the cache, carry the files the simulated
images carry plus the tools KubeDirector's pods run, and cover every hello image the scenarios run."""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from tests.nodeimages.build import build_all
from tests.nodeimages.facts import HELLO_PROGRAM, ROOT, ImageFacts, containerd_name, hello, images

pytestmark = pytest.mark.backends
# References the scenarios name but never run: drift edits reverted before a pod uses them, an edit refused.
NEVER_RUN = {"gitops-kd/hello:9.9.9", "gitops-kd/hello:6.6.6"}


def members(archive: Path) -> dict[str, bytes]:
    """The archive's regular files: name -> bytes."""
    out = {}
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            data = tar.extractfile(member) if member.isfile() else None
            if data is not None:
                out[member.name] = data.read()
    return out


def layer_of(archive: Path) -> tarfile.TarFile:
    files = members(archive)
    manifest = json.loads(files["manifest.json"])
    return tarfile.open(fileobj=io.BytesIO(files[manifest[0]["Layers"][0]]))


@pytest.mark.parametrize("image", images(), ids=lambda i: i.ref)
def test_each_archive_is_a_docker_archive_ctr_imports(built: dict[str, Path], image: ImageFacts) -> None:
    files = members(built[image.ref])
    manifest = json.loads(files["manifest.json"])
    assert len(manifest) == 1 and manifest[0]["RepoTags"] == [image.ref], manifest
    config_bytes = files[manifest[0]["Config"]]
    assert manifest[0]["Config"] == hashlib.sha256(config_bytes).hexdigest() + ".json"  # the image ID, as docker save
    config = json.loads(config_bytes)
    layers = [files[name] for name in manifest[0]["Layers"]]
    assert config["rootfs"] == {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(x).hexdigest() for x in layers]}
    assert (config["architecture"], config["os"]) == ("amd64", "linux")
    assert config["config"]["Entrypoint"] == list(image.entrypoint)
    assert sorted(config["config"].get("ExposedPorts", {})) == [f"{p}/tcp" for p in image.ports]
    with layer_of(built[image.ref]) as layer:
        entries = layer.getmembers()
        names = [m.name for m in entries]
        assert names == sorted(names) and len(set(names)) == len(names)
        assert {(m.mtime, m.uid, m.gid) for m in entries} == {(0, 0, 0)}
        program = layer.getmember(image.entrypoint[0].lstrip("/"))
        assert program.isfile() and program.mode & 0o111, f"{image.entrypoint[0]} is not an executable file"
    assert containerd_name(image.ref) == f"docker.io/{image.ref}"


def test_two_builds_give_identical_bytes_and_the_cache_is_reused(tmp_path: Path) -> None:
    first = build_all(tmp_path / "a", force=True)
    second = build_all(tmp_path / "b", force=True)
    assert [p.name for p in first.values()] == [p.name for p in second.values()]  # the same content keys
    for ref, path in first.items():
        assert path.read_bytes() == second[ref].read_bytes(), f"{ref}: two builds differ"
    stamps = {ref: path.stat().st_mtime_ns for ref, path in first.items()}
    again = build_all(tmp_path / "a")
    assert again == first and {ref: p.stat().st_mtime_ns for ref, p in again.items()} == stamps  # not rewritten


@pytest.mark.parametrize("version", ["1.0.0", "2.0.0"])
def test_hello_carries_the_simulated_files_and_kubedirectors_tools(built: dict[str, Path], version: str) -> None:
    image = hello(version)
    with layer_of(built[image.ref]) as layer:
        for path, content in image.files.items():
            if path != HELLO_PROGRAM:  # the real image has the program there, the simulated one a placeholder line
                data = layer.extractfile(path.lstrip("/"))
                assert data is not None and data.read().decode() == content, path
        bash = layer.getmember("bin/bash")
        assert bash.isfile() and bash.size > 100_000  # the static bash itself, not a link to busybox's ash
        links = {m.name: m.linkname for m in layer.getmembers() if m.issym()}
        for tool in ("sed", "expr", "touch", "grep", "cat", "httpd", "wget", "sleep", "ip", "mkdir"):
            assert links.get(f"bin/{tool}") == "busybox", tool
        assert links.get("bin/sh") == "bash"  # busybox's ash would run its own find and tar before GNU's
        for tool in ("cp", "find", "tar"):  # GNU's: KubeDirector's and gitops-kd's init containers need them
            assert layer.getmember(f"bin/{tool}").size > 100_000, tool
        assert layer.getmember("lib64/ld-linux-x86-64.so.2").issym()


def test_every_hello_image_the_scenarios_run_is_built() -> None:
    named = set()
    for path in [*(ROOT / "tests/scenarios").glob("*.py"), *(ROOT / "repo-template").rglob("*.yaml")]:
        named |= set(re.findall(r"gitops-kd/hello:[0-9][0-9A-Za-z.\-]*", path.read_text(encoding="utf-8")))
    built = {i.ref for i in images()}
    assert named - NEVER_RUN <= built, f"named by the scenarios but not built: {sorted(named - NEVER_RUN - built)}"
    assert {"gitops-kd/hello:1.0.0", "gitops-kd/hello:2.0.0"} <= built


def test_hello_facts_follow_the_kdapps() -> None:
    assert dict(hello("1.0.0").role_ports) == {"controller": (), "worker": (8080,)}
    assert dict(hello("2.0.0").role_ports) == {"controller": (), "worker": (8081,)}
    assert hello("2.0.0").persist_dirs == ("/var/lib/hello", "/opt/hello/cache")
    assert hello("1.0.0").ref == "gitops-kd/hello:1.0.0" and hello("1.0.0").kdapp == "apps/hello.yaml"
