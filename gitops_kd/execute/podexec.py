"""Run a command in a pod's container over the pods/exec WebSocket API and collect its output."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

OUTPUT_LIMIT = 64 * 1024
_STREAM_LOCK = threading.Lock()  # kubernetes.stream swaps ApiClient.call_api while it connects


@dataclass(frozen=True)
class ExecResult:
    """Exit code (None when it timed out, could not start or its answer was lost), output, and an error text if
    any. ``lost``: the exec started but its exit status never came (the connection dropped): it may have run."""

    exit_code: int | None
    stdout: str
    stderr: str
    error: str = ""
    timed_out: bool = False
    lost: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def tail(self, limit: int = 2000) -> str:
        """The last `limit` characters of stdout and stderr together (for Events and status)."""
        text = (self.stdout + (("\n" if self.stdout and self.stderr else "") + self.stderr)).strip()
        if self.error:
            text = (text + "\n" + self.error).strip()
        return text if len(text) <= limit else "..." + text[-limit:]


class PodExec:
    """Executes commands in pods with a private ApiClient (the stream helper patches the client)."""

    def __init__(self, api_client: ApiClient) -> None:
        self._api = ApiClient(api_client.configuration)
        self._core: Any = None  # CoreV1Api, made on first use (importing it loads every client model)

    def run(self, namespace: str, pod: str, container: str | None, command: Sequence[str], timeout: float) -> ExecResult:
        """Run `command` (argv) and wait up to `timeout` seconds for it to exit."""
        kwargs = {
            "command": list(command),
            "stdout": True,
            "stderr": True,
            "stdin": False,
            "tty": False,
            "_preload_content": False,
        }
        if container:
            kwargs["container"] = container
        try:
            with _STREAM_LOCK:
                if self._core is None:
                    from kubernetes.client import CoreV1Api

                    self._core = CoreV1Api(self._api)
                from kubernetes.stream import stream

                resp = stream(self._core.connect_get_namespaced_pod_exec, pod, namespace, **kwargs)
        except ApiException as exc:
            return ExecResult(None, "", "", error=f"exec in pod {namespace}/{pod} refused: {refusal(exc)}")
        except Exception as exc:  # noqa: BLE001 - transport failures become a result, not a crash
            return ExecResult(None, "", "", error=f"exec in pod {namespace}/{pod} failed: {exc}")
        out: list[str] = []
        err: list[str] = []
        deadline = time.monotonic() + timeout
        dropped = ""
        try:
            while resp.is_open() and time.monotonic() < deadline:
                resp.update(timeout=min(1.0, max(0.05, deadline - time.monotonic())))
                if resp.peek_stdout():
                    out.append(resp.read_stdout())
                if resp.peek_stderr():
                    err.append(resp.read_stderr())
            timed_out = resp.is_open()
            if not timed_out:
                out.append(resp.read_stdout() or "")
                err.append(resp.read_stderr() or "")
            code = None if timed_out else _returncode(resp)
        except Exception as exc:  # noqa: BLE001 - the connection dropped mid-stream: a result, not a crash
            timed_out, code, dropped = False, None, f": {exc}"
        finally:
            resp.close()
        stdout, stderr = "".join(out)[-OUTPUT_LIMIT:], "".join(err)[-OUTPUT_LIMIT:]
        if timed_out:
            return ExecResult(None, stdout, stderr, error=f"timed out after {timeout:g}s", timed_out=True)
        if code is None:
            return ExecResult(
                None,
                stdout,
                stderr,
                error=f"exec in pod {namespace}/{pod}: no answer (the connection "
                f"ended before the command's exit status){dropped}",
                lost=True,
            )
        return ExecResult(code, stdout, stderr)

    def close(self) -> None:
        self._api.close()


def _returncode(resp: object) -> int | None:
    try:
        code = resp.returncode  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - an unreadable status channel
        return None
    return int(code) if code is not None else None


_HANDSHAKE = re.compile(r"^Handshake status (\d+) ([^-]*?)\s*-\+-\+-.*-\+-\+-\s*(.*)$", re.DOTALL)


def refusal(exc: ApiException) -> str:
    """One clean line for a refused exec: `<code> <reason>: <message>` from the API server's Status. The
    WebSocket client reports a refused upgrade as status 0 with the raw response (headers and body) in its reason;
    those headers are never shown."""
    code, reason, body = exc.status, str(exc.reason or ""), exc.body if isinstance(exc.body, str) else ""
    handshake = _HANDSHAKE.match(reason)
    if handshake is not None:
        code, reason, body = int(handshake.group(1)), handshake.group(2).strip(), handshake.group(3)
        if body.startswith(("b'", 'b"')) and body[-1:] == body[1]:
            body = body[2:-1]  # the client prints the body as a bytes literal
    try:
        status = json.loads(body) if body.strip() else {}
    except ValueError:
        status = {}
    if isinstance(status, dict) and status.get("message"):
        reason, body = str(status.get("reason") or reason), str(status["message"])
    text = " ".join(f"{code} {reason}: {body}".split())
    return text if len(text) <= 500 else text[:500] + "..."
