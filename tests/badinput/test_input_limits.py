"""Input limits (gitops_kd.spec.limits) are one rule applied where files are loaded: a too-deep, too-large or
too-many-documents manifest is refused at load, naming the file, the field and the reason, by every entry
point (`desired show`, `plan --offline`, `run`), and the running controller stays healthy."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.spec import SpecError, load_manifests
from gitops_kd.spec.limits import MAX_DEPTH, MAX_DOCUMENTS, MAX_FILE_BYTES, MAX_STRING_BYTES
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, NS, ROOT, hello_app

DEPTH = 400
REASON = f"nested more than {MAX_DEPTH} levels deep"


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def deep_hello(depth: int = DEPTH) -> str:
    """The hello app with `depth` levels of maps under spec.label (JSON: PyYAML cannot even write it)."""
    doc = yaml.safe_load(hello_app("1.0.0"))
    doc["spec"]["label"]["extra"] = nested(depth)
    return json.dumps(doc)


def errors_of(path: str, data: bytes) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_manifests(path, data)
    return [str(e) for e in info.value.errors]


def test_a_400_level_kdapp_is_refused_naming_file_field_and_reason() -> None:
    [error] = errors_of("apps/hello.yaml", deep_hello().encode())
    assert error.startswith("apps/hello.yaml: spec.label.extra.a.a") and error.endswith(REASON), error


def test_exactly_the_depth_limit_loads() -> None:
    doc = yaml.safe_load(hello_app("1.0.0"))
    doc["spec"]["label"]["extra"] = nested(MAX_DEPTH - 3)  # spec, label, extra are three levels
    load_manifests("apps/hello.yaml", json.dumps(doc).encode())


def test_block_yaml_too_deep_for_the_parser_is_refused_too() -> None:
    text = "".join("  " * i + "a:\n" for i in range(DEPTH)) + "  " * DEPTH + "b: 1\n"
    [error] = errors_of("apps/x.yaml", text.encode())
    assert "nested too deeply" in error or REASON in error, error


def test_long_string_too_many_documents_and_big_file_are_refused() -> None:
    doc = yaml.safe_load(hello_app("1.0.0"))
    doc["spec"]["label"]["description"] = "x" * (MAX_STRING_BYTES + 1)
    [error] = errors_of("apps/hello.yaml", json.dumps(doc).encode())
    assert error == f"apps/hello.yaml: spec.label.description: string is longer than {MAX_STRING_BYTES} bytes"
    many = "\n---\n".join(["{}"] * (MAX_DOCUMENTS + 1)).encode()
    assert errors_of("apps/many.yaml", many) == [
        f"apps/many.yaml: file holds {MAX_DOCUMENTS + 1} documents, over the limit of {MAX_DOCUMENTS}"
    ]
    [error] = errors_of("apps/big.yaml", b"#" * (MAX_FILE_BYTES + 1))
    assert "larger than the 1048576 byte (1 MiB) limit" in error


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from gitops_kd.cli import main; main()", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2E]:
    world = E2E(tmp_path_factory.mktemp("limits"))
    try:
        yield world
    finally:
        world.close()


def test_desired_show_and_plan_offline_refuse_the_commit(world: E2E, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(world.repo), str(repo)], check=True)
    (repo / "apps" / "hello.yaml").write_text(deep_hello())
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qam", "deep"], check=True)
    shown = cli("desired", "show", str(repo))
    assert shown.returncode == 1 and "refused" in shown.stderr and REASON in shown.stderr, shown.stderr
    assert "apps/hello.yaml: spec.label.extra.a" in shown.stderr
    planned = cli("plan", "--repo", str(repo), "--offline")
    assert planned.returncode != 0 and REASON in planned.stderr + planned.stdout, planned.stderr
    assert "Traceback" not in planned.stderr + shown.stderr


def test_run_refuses_the_commit_and_keeps_reconciling(world: E2E, tmp_path: Path) -> None:
    """Invariant: a commit over the input limits is refused (CommitRefused naming file, field, reason), nothing
    of it is applied, and the controller stays live and keeps reconciling the last applied commit (a drift
    of hello-dev is still reverted)."""
    proc = RunProcess("limits", tmp_path, world.cluster.kubeconfig, str(world.repo), "--namespace", NS, "--no-leader-elect")
    try:
        world.wait_ready_at("1.0.0", timeout=120)
        world.commit({"apps/hello.yaml": deep_hello()}, "hello nested 400 levels under spec.label")
        proc.poll_now()
        refused = wait_for(
            "CommitRefused event naming the depth limit",
            lambda: [
                e
                for e in world.rest.list("v1", "events", NS)["items"]
                if e["reason"] == "CommitRefused" and REASON in e["message"]
            ],
            60,
        )
        assert "apps/hello.yaml: spec.label.extra.a" in refused[0]["message"]
        sts = world.rest.list("apps/v1", "statefulsets", NS, label_selector="kubedirector.hpe.com/role=worker")
        name = sts["items"][0]["metadata"]["name"]
        out = world.kubectl("set", "image", f"statefulset/{name}", "app=gitops-kd/hello:9.9.9")
        assert out.returncode == 0, out.stderr

        def reverted() -> bool:
            got = world.rest.get("apps/v1", "statefulsets", NS, name)
            return [c["image"] for c in got["spec"]["template"]["spec"]["containers"] if c["name"] == "app"] == [
                "gitops-kd/hello:1.0.0"
            ]

        wait_for("drift reverted after the refusal", reverted, 60)
        assert proc.get("/healthz")[0] == 200 and proc.get("/readyz")[0] == 200
        assert "RecursionError" not in proc.log()
    finally:
        proc.stop()
