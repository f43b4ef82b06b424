"""The CLI end to end: `gitops-kd demo`, `gitops-kd run` (webhook, health, graceful stop), `gitops-kd plan`."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

from gitops_kd.server.webhook import sign
from tests.e2e.harness import E2E, ROOT, hello_app, wait_for

CLI = [str(Path(sys.executable).parent / "gitops-kd")]


def test_demo_upgrades_hello_and_exits_0(tmp_path: Path) -> None:
    """Piped (not a TTY): plain text lines never cut; the first deploy is not called an adoption; no status line
    with an empty step; no kubeconfig printed that is gone once the demo exits (without --keep)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(
        [*CLI, "demo", "--state-dir", str(tmp_path / "demo")], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert out.index("committing examples/hello-2.0.0.yaml") < out.index("UpgradeSucceeded")
    assert out.count("PodReplaced") >= 3 and out.count("HookSucceeded") == 3 and out.count("GatePassed") == 3
    assert re.search(r"^UpgradeSucceeded +all members run version 2\.0\.0 \(from 1\.0\.0\)$", out, re.M), out
    assert re.search(
        r"^MigrationSucceeded +run migration of /var/lib/hello in pod default/\S+ \(step 2\.0\.0/\S+/"
        r"migrate/var/lib/hello\): succeeded$",
        out,
        re.M,
    ), out
    assert out.count("upgraded-to-2.0.0") >= 3 and "…" not in out and "┏" not in out, out
    assert "Adopted" not in out and "Deployed" in out and "spec.initContainers" not in out.split("committing")[0]
    assert "1.0.0 → 1.0.0" not in out and not re.search(r"·\s*$", out, re.M), out
    assert "kubeconfig" not in out and "run with --keep to look around" in out, out[-2000:]
    assert re.search(r"web UI \(read-only, live\): http://127\.0\.0\.1:\d+/ui/", out), out[-2000:]


def test_demo_hint_names_real_resources(e2e: E2E) -> None:
    """The kubectl command `demo --keep` suggests works against the cluster (every resource name is served)."""
    from gitops_kd.cli.demo import RESOURCES

    done = e2e.kubectl("get", RESOURCES)
    assert done.returncode == 0, done.stderr


def _http(url: str, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None) -> int:
    return _fetch(url, method, body, headers)[0]


def _fetch(url: str, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(
        url, method=method, data=body if body is not None else (b"{}" if method == "POST" else None), headers=headers or {}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_run_serves_signed_webhook_metrics_and_stops_gracefully(e2e: E2E) -> None:
    secret = e2e.tmp / "webhook-secret"
    secret.write_text("s3cret\n")
    ui_auth = e2e.tmp / "ui-auth"
    ui_auth.write_text("basic viewer:look-only\n")
    proc = subprocess.Popen(
        [
            *CLI,
            "run",
            "--repo",
            str(e2e.repo),
            "--kubeconfig",
            str(e2e.cluster.kubeconfig),
            "--interval",
            "600",
            "--listen",
            "127.0.0.1:0",
            "--cache-dir",
            str(e2e.tmp / "run-cache"),
            "--webhook-secret-file",
            str(secret),
            "--leader-elect",
            "--log-level",
            "warning",
            "--ui-auth-file",
            str(ui_auth),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        url = wait_for(
            "the HTTP address line",
            lambda: next((m.group(1) for line in lines if (m := re.search(r"on (http://127\.0\.0\.1:\d+)", line))), None),
            30,
        )
        assert _http(url + "/healthz") == 200
        wait_for("/readyz 200", lambda: _http(url + "/readyz") == 200, 30)
        e2e.wait_ready_at("1.0.0")
        e2e.commit(
            {"apps/hello.yaml": hello_app("2.0.0", upgrade={"from": [{"versions": ">=1.0.0 <2.0.0", "default": "keep"}]})},
            "2.0.0",
        )
        push = json.dumps({"ref": "refs/heads/main"}).encode()
        assert _http(url + "/webhook", "POST", push, {"X-GitHub-Event": "push"}) == 401  # unsigned
        signed = {"X-GitHub-Event": "push", "X-Hub-Signature-256": sign(b"s3cret", push), "Content-Type": "application/json"}
        assert _http(url + "/webhook", "POST", push, signed) == 202  # the 600s poll interval would not see it in time
        e2e.wait_ready_at("2.0.0", timeout=90)
        idle = 'gitops_kd_rollout_phase{cluster="hello-dev",namespace="default",phase="Idle"} 1.0'
        text = wait_for(
            "the Idle phase in /metrics", lambda: (t := _fetch(url + "/metrics"))[0] == 200 and idle in t[1] and t[1], 30
        )
        assert "gitops_kd_leader 1.0" in text
        assert _http(url + "/ui/") == 401  # the web UI, behind --ui-auth-file
        viewer = {"Authorization": "Basic " + base64.b64encode(b"viewer:look-only").decode()}
        status, page = _fetch(url + "/ui/clusters/default/hello-dev", headers=viewer)
        assert status == 200 and "Cluster hello-dev" in page and 'data-state="done"' in page
        assert 'gitops_kd_upgrade_steps_total{result="success",step="DeletePod"} 3.0' in text
        assert e2e.rest.get("coordination.k8s.io/v1", "leases", "default", "gitops-kd")["spec"]["holderIdentity"]
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
        reader.join(10)
    assert code == 0, "".join(lines)[-3000:]
    stopped = "".join(lines)[-2000:]
    assert "lost the Lease" not in stopped and " ERROR " not in stopped, stopped  # a graceful stop is no loss


def test_plan_offline_and_against_the_cluster(e2e: E2E) -> None:
    offline = subprocess.run([*CLI, "plan", "--repo", str(e2e.repo), "--offline"], capture_output=True, text=True, timeout=60)
    assert offline.returncode == 0, offline.stderr
    assert "1. apply KubeDirectorApp default/hello at version 1.0.0" in offline.stdout
    assert "create KubeDirectorCluster default/hello-dev" in offline.stdout
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    e2e.stop_controller()
    live = [*CLI, "plan", "--repo", str(e2e.repo), "--kubeconfig", str(e2e.cluster.kubeconfig)]
    in_sync = subprocess.run(live, capture_output=True, text=True, timeout=60)
    assert in_sync.returncode == 0 and "in sync" in in_sync.stdout, in_sync.stdout + in_sync.stderr
    e2e.commit({"apps/hello.yaml": hello_app("2.0.0", distroID="other/hello")}, "forbidden")
    refused = subprocess.run(live, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "apps/hello.yaml" in refused.stdout, refused.stdout + refused.stderr
    upgrade = subprocess.run([*live, "--rev", "HEAD~1"], capture_output=True, text=True, timeout=60)
    assert "in sync" in upgrade.stdout
    e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "2.0.0")
    planned = subprocess.run(live, capture_output=True, text=True, timeout=60)
    assert planned.returncode == 0 and "start upgrade of default/hello-dev: hello 1.0.0 -> 2.0.0" in planned.stdout
    assert (
        json.dumps(e2e.rest.get("kubedirector.hpe.com/v1beta1", "kubedirectorapps", "default", "hello")["spec"]["version"])
        == '"1.0.0"'
    )  # plan touched nothing


def test_run_reverts_an_out_of_band_edit_and_alerts(e2e: E2E) -> None:
    proc = subprocess.Popen(
        [
            *CLI,
            "run",
            "--repo",
            str(e2e.repo),
            "--kubeconfig",
            str(e2e.cluster.kubeconfig),
            "--interval",
            "0.5",
            "--listen",
            "off",
            "--cache-dir",
            str(e2e.tmp / "drift-cache"),
            "--log-level",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        e2e.wait_ready_at("1.0.0")
        sts = next(
            s
            for s in e2e.rest.list("apps/v1", "statefulsets", "default")["items"]
            if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
        )
        name = sts["metadata"]["name"]
        # Creating the cluster (KubeDirector rendering it, gitops-kd adopting it) is never drift
        assert not [e for e in e2e.rest.list("v1", "events", "default")["items"] if e["reason"] == "DriftDetected"]

        def image() -> str:
            return e2e.rest.get("apps/v1", "statefulsets", "default", name)["spec"]["template"]["spec"]["containers"][0]["image"]

        def edit_and_see_alert() -> list[dict] | None:
            # Until the controller has seen the cluster in sync once, a difference is convergence, not
            # drift: edit again until the edit is reported as drift.
            assert e2e.kubectl("set", "image", f"statefulset/{name}", "app=gitops-kd/hello:6.6.6").returncode == 0
            wait_for("the edit reverted", lambda: image() == "gitops-kd/hello:1.0.0", 30)
            return [
                e
                for e in e2e.rest.list("v1", "events", "default")["items"]
                if e["reason"] == "DriftDetected" and e["involvedObject"]["name"] == name
            ] or None

        found = wait_for("a DriftDetected event", edit_and_see_alert, 60, 0.5)
        assert "image" in found[0]["message"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0


def test_demo_keep_reverts_an_out_of_band_edit_and_stops_on_sigterm(tmp_path: Path) -> None:
    """Invariant: `demo --keep` leaves a controller that behaves as `run` does: an out-of-band edit (kubectl, through
    the kubeconfig the demo prints) is reverted to Git with DriftDetected and DriftReverted events, which the demo
    also prints; `gitops-kd status` there shows the applied revision; SIGTERM stops it cleanly (exit 0)."""
    from kubernetes.config import new_client_from_config

    from kubeplumb.rest import RestClient

    proc = subprocess.Popen(
        [*CLI, "demo", "--keep", "--state-dir", str(tmp_path / "demo"), "--listen", "off"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        wait_for("the demo serving", lambda: any("serving until Ctrl-C" in line for line in lines), 180, 0.2)
        kubeconfig = next(m.group(1) for line in lines if (m := re.match(r"kubeconfig: +(\S+)$", line)))
        rest = RestClient(new_client_from_config(config_file=kubeconfig))
        status = subprocess.run([*CLI, "status", "--kubeconfig", kubeconfig], capture_output=True, text=True, timeout=60)
        assert status.returncode == 0 and re.search(r"^default/gitops-kd +main +\w{12} hello 2\.0\.0", status.stdout, re.M), (
            status.stdout + status.stderr
        )
        synced = subprocess.run(
            [*CLI, "sync", "-n", "default", "--kubeconfig", kubeconfig, "--timeout", "60"],
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert synced.returncode == 0 and "✔ polled file://" in synced.stdout, synced.stdout + synced.stderr
        sts = next(
            s["metadata"]["name"]
            for s in rest.list("apps/v1", "statefulsets", "default")["items"]
            if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
        )

        def image() -> str:
            return rest.get("apps/v1", "statefulsets", "default", sts)["spec"]["template"]["spec"]["containers"][0]["image"]

        def events(reason: str) -> list[dict]:
            return [
                e
                for e in rest.list("v1", "events", "default")["items"]
                if e["reason"] == reason and e["involvedObject"]["name"] == sts
            ]

        edit = subprocess.run(
            [
                "kubectl",
                "--kubeconfig",
                kubeconfig,
                "-n",
                "default",
                "set",
                "image",
                f"statefulset/{sts}",
                "app=gitops-kd/hello:6.6.6",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert edit.returncode == 0, edit.stderr
        wait_for("the edit reverted to Git", lambda: image() == "gitops-kd/hello:2.0.0", 60, 0.2)
        detected = wait_for("a DriftDetected event", lambda: events("DriftDetected"), 30, 0.2)
        assert "gitops-kd/hello:2.0.0 -> gitops-kd/hello:6.6.6" in detected[0]["message"], detected
        wait_for("a DriftReverted event", lambda: events("DriftReverted"), 30, 0.2)
        wait_for(
            "both printed by the demo",
            lambda: (
                any(line.startswith("DriftDetected") for line in lines)
                and any(line.startswith("DriftReverted") for line in lines)
            ),
            30,
            0.2,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(90)
        reader.join(10)
    assert code == 0, "".join(lines)[-3000:]
    assert "Traceback" not in "".join(lines), "".join(lines)[-3000:]


def test_demo_keep_hints_work_as_printed(tmp_path: Path) -> None:
    """Every command `demo --keep` prints runs as printed from a shell whose PATH lacks the virtualenv (issue 29,
    4): kubectl and gitops-kd both reach the kept cluster; the drift hint names the kubeconfig."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    env = {**os.environ, "PATH": path, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [*CLI, "demo", "--keep", "--state-dir", str(tmp_path / "demo")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        wait_for("the demo to serve", lambda: any("serving until Ctrl-C" in line for line in lines), 180)
        out = "".join(lines)
        start = out.index("look around:")
        hints = [line.split("look around:")[-1].strip() for line in out[start:].splitlines()[:3]]
        assert hints[0].startswith("kubectl --kubeconfig ") and " status " in hints[1] and " sync " in hints[2], out
        for hint in hints:
            done = subprocess.run(["bash", "-c", hint], env=env, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, f"{hint}: {done.stdout}{done.stderr}"
        edit = re.search(r"see drift reverted: (kubectl --kubeconfig (\S+) edit kdcluster hello-dev)", out)
        assert edit is not None and Path(edit.group(2)).exists(), out[-2000:]
        metrics = re.search(r"metrics: (http://127\.0\.0\.1:\d+/metrics)", out)
        assert metrics is not None, out[-2000:]
        code, body = _fetch(metrics.group(1))  # the demo serves /metrics as `run` does (issue 29, 9)
        assert code == 200 and "gitops_kd_rollout_phase" in body, body[:500]
    finally:  # SIGTERM, as Kubernetes stops it (a background job, as in CI's floors run, ignores SIGINT)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, "".join(lines)[-3000:]
