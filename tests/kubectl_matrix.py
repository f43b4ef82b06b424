"""Which kubectl commands work on which kubectl version against the embedded cluster: runs each command of
COMMANDS with each kubectl and renders the table in docs/embedded-cluster.md (between the MARKERS).

`python -m tests.kubectl_matrix [--write]` (or scripts/kubectl-matrix) runs every kubectl under SDK and prints
the table, or writes it into the doc; tests/sim/apiserver/test_kubectl_matrix.py runs the oldest and newest.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kdsim.cluster import EmbeddedCluster
from tests.kubectl_streams import SDK, forwarding, free_port, served_in_pod

DOC = Path(__file__).resolve().parents[1] / "docs" / "embedded-cluster.md"
START, END = "<!-- kubectl-matrix:start -->", "<!-- kubectl-matrix:end -->"
IMAGE = "example.com/matrix:1"


def installed_versions() -> list[str]:
    found = [p.name.removeprefix("kubectl.") for p in SDK.glob("kubectl.1.*")]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


@dataclass
class Ctx:
    """One kubectl version against one namespace holding a running pod `p` (container `app`)."""

    kubectl: str
    kubeconfig: Path
    namespace: str
    tmp: Path

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 30, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.kubectl, "--kubeconfig", str(self.kubeconfig), "-n", self.namespace, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
            env={"PATH": "/usr/bin:/bin", "HOME": str(self.tmp), **(env or {})},
        )

    def ok(self, *args: str, expect: str = "", env: dict[str, str] | None = None, stdin: str | None = None) -> bool:
        done = self.run(*args, env=env, stdin=stdin)
        return done.returncode == 0 and expect in done.stdout


def _apply(c: Ctx) -> bool:
    path = c.tmp / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: '1'\n")
    return c.ok("apply", "-f", str(path), expect="configmap/applied")


def _diff(c: Ctx) -> bool:
    path = c.tmp / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: '2'\n")
    done = c.run("diff", "-f", str(path))
    return done.returncode == 1 and '+  a: "2"' in done.stdout


def _edit(c: Ctx) -> bool:
    edited = c.ok("edit", "configmap/applied", env={"KUBE_EDITOR": "sed -i s/^\\ \\ a:\\ .*/\\ \\ a:\\ edited/"})
    return edited and c.ok("get", "configmap/applied", "-o", "jsonpath={.data.a}", expect="edited")


def _cp(c: Ctx) -> bool:
    src = c.tmp / "note.txt"
    src.write_text("copied\n")
    return c.ok("cp", str(src), "p:/tmp/note.txt", "-c", "app") and c.ok(
        "exec", "p", "-c", "app", "--", "cat", "/tmp/note.txt", expect="copied"
    )


def _port_forward(c: Ctx) -> bool:
    """An HTTP round trip through `port-forward` to a server run in the pod (started with the newest kubectl)."""
    port, version = free_port(), Path(c.kubectl).name.removeprefix("kubectl.")
    try:
        with (
            served_in_pod(c.kubeconfig, c.namespace, "p", port, "app"),
            forwarding(c.kubeconfig, version, c.namespace, "p", port) as (local, _log),
            urllib.request.urlopen(f"http://127.0.0.1:{local}/index.html", timeout=20) as answer,
        ):
            return bool(answer.read() == b"served from the pod\n")
    except (AssertionError, OSError):
        return False


COMMANDS: dict[str, Callable[[Ctx], bool]] = {
    "get": lambda c: c.ok("get", "pods", "-o", "wide", expect="p "),
    "describe pod": lambda c: c.ok("describe", "pod", "p", expect="Started container app"),
    "create configmap": lambda c: c.ok("create", "configmap", "made", "--from-literal=k=v"),
    "apply": _apply,
    "diff": _diff,
    "edit (KUBE_EDITOR)": _edit,
    "explain": lambda c: c.ok("explain", "pod.spec.containers.ports", expect="containerPort"),
    "explain (CRD)": lambda c: c.ok("explain", "kubedirectorclusters.spec", expect="app"),
    "set image": lambda c: c.ok("set", "image", "pod/p", "app=example.com/matrix:2", expect="image updated"),
    "label": lambda c: c.ok("label", "pod", "p", "matrix=yes", expect="labeled"),
    "logs": lambda c: c.run("logs", "p", "-c", "app").returncode == 0,
    "exec": lambda c: c.ok("exec", "p", "-c", "app", "--", "echo", "hello", expect="hello"),
    "exec -i (stdin)": lambda c: c.ok("exec", "-i", "p", "-c", "app", "--", "tr", "a-z", "A-Z", stdin="up\n", expect="UP"),
    "cp": _cp,
    "port-forward": _port_forward,
    "auth can-i": lambda c: c.ok("auth", "can-i", "create", "pods", expect="yes"),
    "auth can-i --list": lambda c: c.ok("auth", "can-i", "--list", expect="*.*"),
    "auth whoami": lambda c: c.ok("auth", "whoami", expect="system:authenticated"),
    "delete": lambda c: c.ok("delete", "configmap", "made", expect="deleted"),
}


def measure(cluster: EmbeddedCluster, version: str, tmp: Path) -> dict[str, bool]:
    """Run every command with kubectl `version` in a fresh namespace with a running pod."""
    kubectl = str(SDK / f"kubectl.{version}")
    ns = f"m{version.replace('.', '')}-{uuid.uuid4().hex[:6]}"
    home = tmp / version
    home.mkdir(parents=True, exist_ok=True)
    ctx = Ctx(kubectl, cluster.kubeconfig, ns, home)
    subprocess.run(
        [kubectl, "--kubeconfig", str(cluster.kubeconfig), "create", "namespace", ns], check=True, capture_output=True, timeout=30
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "app", "image": IMAGE}], "terminationGracePeriodSeconds": 1},
    }
    (home / "pod.json").write_text(json.dumps(pod))
    ctx.run("create", "-f", str(home / "pod.json"))
    deadline = time.monotonic() + 60
    while not ctx.ok("get", "pod", "p", "-o", "jsonpath={.status.containerStatuses[0].ready}", expect="true"):
        if time.monotonic() > deadline:
            raise AssertionError(f"pod p in {ns} not ready after 60 s")
        time.sleep(0.2)
    return {name: check(ctx) for name, check in COMMANDS.items()}


def render(results: dict[str, dict[str, bool]]) -> str:
    versions = list(results)
    lines = ["| Command | " + " | ".join(versions) + " |", "|---" * (len(versions) + 1) + "|"]
    for name in COMMANDS:
        lines.append(f"| {name} | " + " | ".join("yes" if results[v][name] else "**no**" for v in versions) + " |")
    return "\n".join(lines)


def documented() -> dict[str, dict[str, bool]]:
    """The table now in the doc: version -> command -> works."""
    text = DOC.read_text()
    if START not in text or END not in text:
        return {}
    rows = [
        line.strip().strip("|").split("|")
        for line in text.split(START, 1)[1].split(END, 1)[0].strip().splitlines()
        if line.startswith("|")
    ]
    versions = [v.strip() for v in rows[0][1:]]
    out: dict[str, dict[str, bool]] = {v: {} for v in versions}
    for row in rows[2:]:
        for v, cell in zip(versions, row[1:]):
            out[v][row[0].strip()] = cell.strip() == "yes"
    return out


def write(table: str) -> None:
    text = DOC.read_text()
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    DOC.write_text(pattern.sub(lambda _: f"{START}\n{table}\n{END}", text))


def main(argv: list[str]) -> int:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kubectl-matrix-") as tmp, EmbeddedCluster(Path(tmp) / "cluster") as cluster:
        results = {v: measure(cluster, v, Path(tmp)) for v in installed_versions()}
    table = render(results)
    if "--write" in argv:
        write(table)
        print(f"wrote the table for {', '.join(results)} into {DOC}")
    else:
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
