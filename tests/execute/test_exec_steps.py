"""RunStep and CheckGate over real pods/exec: output captured, done steps never re-run, gate pass recorded."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from gitops_kd.execute import Executor
from gitops_kd.execute.podexec import PodExec
from gitops_kd.plan.actions import CheckGate, EnsureRollout, RunStep
from gitops_kd.spec.upgrade import Gate, HttpGet
from gitops_kd.steps.tcp_socket import TcpSocket
from kdsim.apiserver.faults import FORBIDDEN
from tests.execute.conftest import NS, events

ROLLOUT = "gitops-kd.io/v1alpha1"


def worker_pod(obj: dict[str, Any], index: int = 0) -> str:
    role = next(r for r in obj["status"]["roles"] if r["id"] == "worker")
    return role["members"][index]["pod"]


def cat(cluster: Any, pod: str, path: str) -> str:
    res = PodExec(cluster.api_client()).run(NS, pod, "app", ["cat", path], timeout=20)
    assert res.exit_code == 0, res.tail()
    return res.stdout


def test_exec_result_carries_exit_code_and_output(hello: Any) -> None:
    cluster, _rest, obj = hello
    res = PodExec(cluster.api_client()).run(
        NS, worker_pod(obj), "app", ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], timeout=20
    )
    assert (res.exit_code, res.stdout, res.stderr) == (3, "out\n", "err\n")
    slow = PodExec(cluster.api_client()).run(NS, worker_pod(obj), "app", ["sleep", "5"], timeout=0.5)
    assert slow.timed_out and slow.exit_code is None


def test_hook_runs_once_and_is_recorded(hello: Any) -> None:
    cluster, rest, obj = hello
    ex = Executor(cluster.api_client())
    ex.execute(EnsureRollout(NS, "hello-dev", "hello", "3.0.0", "2.0.0", "beef" * 10, "upgrade"))
    pod = worker_pod(obj, 1)
    hook = RunStep(
        NS,
        "hello-dev",
        pod,
        "app",
        f"3.0.0/{pod}/hook",
        "hook",
        ("/bin/sh", "-c", "echo line >> /var/lib/hello/hook.log; echo hook-output"),
        30,
    )
    first = ex.execute(hook)
    assert first.changed and not first.failed and "hook-output" in first.message
    status = rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["status"]
    assert status["pods"][pod]["hookDone"] is True and "hook-output" in status["pods"][pod]["output"]
    assert not ex.execute(hook).changed  # recorded in status: no exec at all
    # Even with the status entry lost, the marker in the pod prevents a second run.
    rest.patch(ROLLOUT, "kdrollouts", NS, "hello-dev", {"status": {"pods": {pod: None}}}, subresource="status")
    again = ex.execute(hook)
    assert not again.changed and not again.failed
    assert cat(cluster, pod, "/var/lib/hello/hook.log") == "line\n"
    assert any("hook-output" in e["message"] for e in events(rest, "HookSucceeded"))


def test_failed_step_stalls_and_is_not_rerun(hello: Any) -> None:
    cluster, rest, obj = hello
    ex = Executor(cluster.api_client())
    ex.execute(EnsureRollout(NS, "hello-dev", "hello", "4.0.0", "3.0.0", "f00d" * 10, "upgrade"))
    pod = worker_pod(obj, 0)
    step = RunStep(
        NS,
        "hello-dev",
        pod,
        "app",
        f"4.0.0/{pod}/migrate//var/lib/hello",
        "migrate",
        ("/bin/sh", "-c", "echo try >> /var/lib/hello/migrate.log; echo boom >&2; exit 4"),
        30,
        "/var/lib/hello",
    )
    out = ex.execute(step)
    assert out.failed and "exit code 4" in out.message and "boom" in out.message
    status = rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["status"]
    assert status["phase"] == "Stalled" and status["stalledReason"] == "StepFailed"
    second = ex.execute(step)
    assert second.failed and "StepInterrupted" in rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["status"]["stalledReason"]
    assert cat(cluster, pod, "/var/lib/hello/migrate.log") == "try\n"


def test_gate_exec_and_http(hello: Any) -> None:
    cluster, rest, obj = hello
    ex = Executor(cluster.api_client())
    ex.execute(EnsureRollout(NS, "hello-dev", "hello", "5.0.0", "4.0.0", "abcd" * 10, "upgrade"))
    pod = worker_pod(obj, 1)
    gate = Gate(("/bin/sh", "-c", "test -f /var/lib/hello/go"), None, period_seconds=1, timeout_seconds=30)
    check = CheckGate(NS, "hello-dev", pod, "worker", gate)
    closed = ex.execute(check)
    assert not closed.changed and closed.requeue_after == 1.0
    assert rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["status"].get("gateCheckedAt")
    PodExec(cluster.api_client()).run(NS, pod, "app", ["touch", "/var/lib/hello/go"], timeout=20)
    assert ex.execute(check).changed
    assert rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["status"]["pods"][pod]["gatePassed"] is True
    assert not ex.execute(check).changed
    assert events(rest, "GatePassed")
    http = CheckGate(
        NS, "hello-dev", worker_pod(obj, 0), "worker", Gate(None, HttpGet("/healthz", 1), period_seconds=2, timeout_seconds=30)
    )
    refused = ex.execute(http)  # nothing listens on port 1 in the pod
    assert not refused.changed and refused.requeue_after == 2.0


def test_http_gate_passes_on_a_2xx_answer_inside_the_pod(hello: Any) -> None:
    """The embedded node shares the host's loopback with its pods, so a server the test starts on
    127.0.0.1 is what the in-pod fetch of an httpGet gate reaches."""
    import http.server
    import threading

    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            hits.append(self.path)
            self.send_response(200 if self.path == "/ready" else 503)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cluster, rest, obj = hello
        ex = Executor(cluster.api_client())
        ex.execute(EnsureRollout(NS, "hello-dev", "hello", "6.0.0", "5.0.0", "abce" * 10, "upgrade"))
        pod = worker_pod(obj, 0)
        port = server.server_address[1]
        closed = ex.execute(CheckGate(NS, "hello-dev", pod, "worker", Gate(None, HttpGet("/busy", port), 1, 30)))
        assert not closed.changed and hits == ["/busy"]
        opened = ex.execute(CheckGate(NS, "hello-dev", pod, "worker", Gate(None, HttpGet("ready", port), 1, 30)))
        assert opened.changed and hits == ["/busy", "/ready"]
        assert rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["status"]["pods"][pod]["gatePassed"] is True
    finally:
        server.shutdown()


def test_tcp_socket_gate_passes_when_the_port_accepts_inside_the_pod(hello: Any) -> None:
    """A tcpSocket gate probes from inside the member's pod (the embedded node shares the host's loopback): a port
    nobody listens on keeps it closed (the check time recorded, retried after periodSeconds), a listening one
    passes it (gatePassed recorded)."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        closed_port = spare.getsockname()[1]  # bound, not listening: a connect is refused
        cluster, rest, obj = hello
        ex = Executor(cluster.api_client())
        ex.execute(EnsureRollout(NS, "hello-dev", "hello", "6.1.0", "6.0.0", "abd0" * 10, "upgrade"))
        pod = worker_pod(obj, 0)
        closed = ex.execute(
            CheckGate(NS, "hello-dev", pod, "worker", Gate(probe=TcpSocket(closed_port), period_seconds=3, timeout_seconds=30))
        )
        assert not closed.changed and closed.requeue_after == 3.0
        assert "TCP socket" in closed.description
        assert rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["status"].get("gateCheckedAt")
        with listener:
            opened = ex.execute(
                CheckGate(NS, "hello-dev", pod, "worker", Gate(probe=TcpSocket(port), period_seconds=3, timeout_seconds=30))
            )
    assert opened.changed
    assert rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["status"]["pods"][pod]["gatePassed"] is True


def test_step_whose_exec_answer_is_lost_runs_once(hello: Any) -> None:
    """Invariant: a migration runs once per pod per attempt even when it ran but its exec's answer was lost (the
    API server cut the connection after the command): the retry finds the step's marker, records it, runs nothing."""
    cluster, rest, obj = hello
    ex = Executor(cluster.api_client())
    ex.execute(EnsureRollout(NS, "hello-dev", "hello", "7.0.0", "6.0.0", "abcf" * 10, "upgrade"))
    pod = worker_pod(obj, 1)
    step = RunStep(
        NS,
        "hello-dev",
        pod,
        "app",
        f"7.0.0/{pod}/migrate//var/lib/hello",
        "migrate",
        ("/bin/sh", "-c", "echo ran >> /var/lib/hello/lost.log"),
        30,
        "/var/lib/hello",
    )
    cluster.faults.lose_next(1, verb="*", resource="pods/exec")
    lost = ex.execute(step)
    assert lost.failed and lost.requeue_after and "no answer" in lost.message, lost.message
    assert cluster.faults.rules() == []
    assert cat(cluster, pod, "/var/lib/hello/lost.log") == "ran\n"
    status = rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["status"]
    assert status["phase"] != "Stalled" and step.step_id not in (status["pods"][pod].get("migrationsDone") or ())
    retried = ex.execute(step)
    assert not retried.failed, retried.message
    status = rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["status"]
    assert step.step_id in status["pods"][pod]["migrationsDone"] and not status["pods"][pod].get("execFailures")
    assert cat(cluster, pod, "/var/lib/hello/lost.log") == "ran\n"


def test_a_refused_gate_exec_is_logged_as_one_clean_line(hello: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Invariant: when the API server refuses a gate's exec (RBAC 403 on pods/exec), the log line and the rollout's
    step say so in one line with the server's own reason, never the raw HTTP response (headers) of the refused
    WebSocket upgrade."""
    cluster, rest, obj = hello
    ex = Executor(cluster.api_client())
    ex.execute(EnsureRollout(NS, "hello-dev", "hello", "5.0.0", "4.0.0", "abcd" * 10, "upgrade"))
    pod = worker_pod(obj, 0)
    check = CheckGate(NS, "hello-dev", pod, "worker", Gate(("/bin/true",), None, period_seconds=1, timeout_seconds=30))
    cluster.faults.add(FORBIDDEN, "*", "pods/exec", 1)
    with caplog.at_level(logging.INFO, logger="gitops_kd.execute.gate"):
        outcome = ex.execute(check)
    assert not outcome.changed
    [line] = [r.getMessage() for r in caplog.records if r.name == "gitops_kd.execute.gate"]
    assert f'exec in pod {NS}/{pod} refused: 403 Forbidden: pods "{pod}" is forbidden: User' in line, line
    assert 'resource "pods/exec"' in line, line
    assert "\n" not in line and "-+-+-" not in line and "content-type" not in line.lower(), line
    step = rest.get(ROLLOUT, "kdrollouts", NS, "hello-dev")["status"]["step"]
    assert "403 Forbidden" in step and "content-type" not in step.lower(), step
