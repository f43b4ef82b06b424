"""One pod's life on the simulated node: sandbox setup, init containers run for real, simulated main containers.

`PodRuntime.step(pod)` advances the pod as far as it can now and returns when to look again; `status()`
renders what the kubelet reports. Main containers' commands are not run (apps are simulated): they are
"running", Ready after the image's ready delay or when their exec readinessProbe passes; the image's
ImageBehavior can make them never ready or crash-loop. Restart back-off is shortened (0.5 s doubling to 5 s).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from kdsim.images import ImageStore, image_id
from kdsim.kubelet import runner, sandbox
from kdsim.kubelet.status import ContainerRun, now_rfc3339, pod_status

log = logging.getLogger(__name__)

CRASH_AFTER = 0.2  # seconds a crash-looping container runs before it exits
BACKOFF_BASE, BACKOFF_MAX = 0.5, 5.0
INIT_TIMEOUT = 120.0


def _tree_size(root: Path) -> int:
    return sum(
        os.path.getsize(os.path.join(d, f))
        for d, _, files in os.walk(root)
        for f in files
        if not os.path.islink(os.path.join(d, f))
    )


def go_duration(seconds: float) -> str:
    """Go's time.Duration String() truncated to the millisecond: 0s, 512ms, 1.5s, 2m3.25s."""
    ms = int(seconds * 1000)
    if ms < 1000:
        return f"{ms}ms" if ms else "0s"
    minutes, rest = divmod(ms, 60000)
    secs = f"{rest // 1000}.{rest % 1000:03d}".rstrip("0").rstrip(".") + "s"
    return f"{minutes}m{secs}" if minutes else secs


def backoff(restarts: int) -> float:
    return cast(float, min(BACKOFF_MAX, BACKOFF_BASE * (2 ** max(0, restarts - 1))))


@dataclass
class ContainerContext:
    """How to start a process in one container of the pod (used by init, probes and exec)."""

    rootfs: Path
    image_root: Path
    env: dict[str, str]
    mounts: tuple[runner.Mount, ...]
    workdir: str
    hostname: str

    def process(self, argv: tuple[str, ...]) -> runner.ContainerProcess:
        return runner.ContainerProcess(
            rootfs=self.rootfs,
            argv=argv,
            env=self.env,
            workdir=self.workdir,
            mounts=self.mounts,
            hostname=self.hostname,
            image_root=self.image_root,
        )


@dataclass
class PodRuntime:
    """Node-side state of one pod (by uid)."""

    uid: str
    pod_ip: str
    host_ip: str
    start_time: str = field(default_factory=now_rfc3339)
    init: list[ContainerRun] = field(default_factory=list)
    main: list[ContainerRun] = field(default_factory=list)
    contexts: dict[str, ContainerContext] = field(default_factory=dict)
    phase: str = "Pending"
    waiting_reason: str = ""
    failed: bool = False
    _due: dict[str, float] = field(default_factory=dict)
    _probe_failures: dict[str, int] = field(default_factory=dict)
    # Events for the kubelet to write: (type, reason, message, fieldPath); node_images: the images the node
    # has "pulled" (shared by the node's pods); _pulls: container -> (pull seconds, image bytes) when pulled
    events: list[tuple[str, str, str, str]] = field(default_factory=list)
    node_images: set[str] = field(default_factory=set)
    _pulls: dict[str, tuple[float, int]] = field(default_factory=dict)
    _pod_format: str = ""

    # -- setup ---------------------------------------------------------------------------------------
    @classmethod
    def adopt(cls, pod: Mapping[str, Any], host_ip: str) -> PodRuntime | None:
        """Resume a pod this node ran before a restart (state_dir kept): Running, init done, IP kept."""
        status = pod.get("status") or {}
        if status.get("phase") != "Running" or not status.get("podIP"):
            return None
        runtime = cls(
            uid=pod["metadata"]["uid"],
            pod_ip=status["podIP"],
            host_ip=host_ip,
            start_time=status.get("startTime") or now_rfc3339(),
            phase="Running",
        )
        for spec_key, status_key, target in (
            ("initContainers", "initContainerStatuses", runtime.init),
            ("containers", "containerStatuses", runtime.main),
        ):
            known = {c.get("name"): c for c in status.get(status_key) or []}
            for c in (pod.get("spec") or {}).get(spec_key) or []:
                cs = known.get(c["name"]) or {}
                run = ContainerRun(
                    c["name"],
                    c.get("image", ""),
                    image_id(c.get("image") or "none"),
                    restart_count=int(cs.get("restartCount") or 0),
                )
                if spec_key == "initContainers":
                    run.run()
                    run.terminate(0)
                else:
                    run.run()
                    run.started_at = ((cs.get("state") or {}).get("running") or {}).get("startedAt") or run.started_at
                    run.ready = bool(cs.get("ready"))
                target.append(run)
        return runtime

    def setup(self, pod: Mapping[str, Any], dirs: sandbox.NodeDirs, images: ImageStore, lookup: sandbox.Lookup) -> None:
        """Create volumes and container rootfs copies; raises sandbox.VolumeError while a volume is missing."""
        spec = pod.get("spec") or {}
        if not self.main:
            self.init = [
                ContainerRun(c["name"], c.get("image", ""), image_id(c.get("image") or "none"), reason="PodInitializing")
                for c in spec.get("initContainers") or []
            ]
            reason = "PodInitializing" if self.init else "ContainerCreating"
            self.main = [
                ContainerRun(c["name"], c.get("image", ""), image_id(c.get("image") or "none"), reason=reason)
                for c in spec.get("containers") or []
            ]
        volumes = sandbox.prepare_volumes(dirs, pod, lookup)
        hostname = spec.get("hostname") or (pod.get("metadata") or {}).get("name", "")
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            began = time.monotonic()
            image_root = images.rootfs(c.get("image") or "none")
            self._pulls[c["name"]] = (time.monotonic() - began, _tree_size(image_root))
            rootfs = sandbox.prepare_rootfs(dirs, self.uid, c["name"], image_root)
            self.contexts[c["name"]] = ContainerContext(
                rootfs=rootfs,
                image_root=image_root,
                env=sandbox.container_env(pod, c, lookup),
                mounts=sandbox.container_mounts(c, volumes),
                workdir=c.get("workingDir") or "/",
                hostname=hostname,
            )

    @property
    def ready_to_step(self) -> bool:
        return bool(self.contexts)

    # -- the state machine ---------------------------------------------------------------------------
    def step(self, pod: Mapping[str, Any], images: ImageStore) -> float | None:
        """Advance; return seconds until the next step is due (None: nothing scheduled)."""
        if self.failed:
            return None
        spec = pod.get("spec") or {}
        meta = pod.get("metadata") or {}
        self._pod_format = f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"  # kubelet's format.Pod
        policy = spec.get("restartPolicy", "Always")
        now = time.monotonic()
        for run, c in zip(self.init, spec.get("initContainers") or []):
            if run.state == "terminated" and run.exit_code == 0:
                continue
            if run.state == "terminated":  # failed: back off, then retry (or give up under Never)
                if policy == "Never":
                    self.failed, self.phase = True, "Failed"
                    return None
                run.restart_waiting("CrashLoopBackOff", f"back-off restarting failed container {run.name}")
                self._back_off(run, "initContainers")
                self._due[run.name] = now + backoff(run.restart_count)
                return backoff(run.restart_count)
            if now < self._due.get(run.name, 0):
                return self._due[run.name] - now
            self._run_init(pod, run, c)
            if run.exit_code != 0:
                return 0.05 if policy != "Never" else 0.0
        self.phase = "Running"
        delays = [
            d
            for run, c in zip(self.main, spec.get("containers") or [])
            if (d := self._step_main(run, c, images, now)) is not None
        ]
        return min(delays) if delays else None

    def _run_init(self, pod: Mapping[str, Any], run: ContainerRun, container: Mapping[str, Any]) -> None:
        ctx = self.contexts[run.name]
        argv = sandbox.container_argv(container, ctx.env)
        self._starting(run, container, "initContainers")
        run.run()
        if not argv:
            run.terminate(0)
            return
        result = runner.run(ctx.process(argv), timeout=INIT_TIMEOUT)
        self._log(run.name, result.stdout + result.stderr)
        message = result.stderr.decode(errors="replace").strip()[-1024:] if result.exit_code else ""
        run.terminate(result.exit_code, message)
        log.info("pod %s: init container %s exited %s", (pod.get("metadata") or {}).get("name"), run.name, result.exit_code)

    def _starting(self, run: ContainerRun, container: Mapping[str, Any], spec_key: str) -> None:
        """The kubelet's events for starting a container: the image pull (or that it is present), Created,
        Started (kubelet 1.30 wording)."""
        path = f"spec.{spec_key}{{{run.name}}}"
        image = str(container.get("image") or "")
        if container.get("imagePullPolicy") == "Always" or image not in self.node_images:
            took, size = self._pulls.get(run.name, (0.0, 0))
            self.events.append(("Normal", "Pulling", f'Pulling image "{image}"', path))
            self.events.append(
                (
                    "Normal",
                    "Pulled",
                    f'Successfully pulled image "{image}" in {go_duration(took)} '
                    f"({go_duration(took)} including waiting). Image size: {size} bytes.",
                    path,
                )
            )
            self.node_images.add(image)
        else:
            self.events.append(("Normal", "Pulled", f'Container image "{image}" already present on machine', path))
        self.events.append(("Normal", "Created", f"Created container {run.name}", path))
        self.events.append(("Normal", "Started", f"Started container {run.name}", path))

    def _back_off(self, run: ContainerRun, spec_key: str) -> None:
        self.events.append(
            (
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {run.name} in pod {self._pod_format}",
                f"spec.{spec_key}{{{run.name}}}",
            )
        )

    def stopping(self) -> list[tuple[str, str, str, str]]:
        """The Killing events of the containers running when the pod is deleted."""
        return [
            ("Normal", "Killing", f"Stopping container {run.name}", f"spec.containers{{{run.name}}}")
            for run in self.main
            if run.state == "running"
        ]

    def take_events(self) -> list[tuple[str, str, str, str]]:
        out, self.events = self.events, []
        return out

    def _log(self, container: str, data: bytes) -> None:
        ctx = self.contexts[container]
        path = ctx.rootfs.parent / "log"
        with path.open("ab") as fh:
            fh.write(data)

    def _step_main(self, run: ContainerRun, container: Mapping[str, Any], images: ImageStore, now: float) -> float | None:
        behavior = images.behavior(run.image)
        due = self._due.get(run.name, 0.0)
        if now < due:
            return due - now
        if run.state == "waiting":
            self._starting(run, container, "containers")
            run.run()
            if behavior.crash_loop:
                self._due[run.name] = now + CRASH_AFTER
                return CRASH_AFTER
            probe = container.get("readinessProbe") or {}
            first = float(probe.get("initialDelaySeconds") or 0)
            if "exec" not in probe:
                first = max(first, images.ready_delay(run.image))
            self._due[run.name] = now + first
            return first
        if run.state == "running" and behavior.crash_loop:
            run.terminate(1, "simulated crash (ImageBehavior.crash_loop)")
            self._due[run.name] = now + CRASH_AFTER
            return CRASH_AFTER
        if run.state == "terminated":
            run.restart_waiting("CrashLoopBackOff", f"back-off restarting failed container={run.name}")
            self._back_off(run, "containers")
            self._due[run.name] = now + backoff(run.restart_count)
            return backoff(run.restart_count)
        if behavior.never_ready:
            run.ready = False
            return None
        probe = container.get("readinessProbe") or {}
        if "exec" not in probe:
            run.ready = True
            return None
        return self._probe(run, probe, now)

    def _probe(self, run: ContainerRun, probe: Mapping[str, Any], now: float) -> float:
        argv = tuple(str(a) for a in (probe["exec"].get("command") or []))
        timeout = float(probe.get("timeoutSeconds") or 1)
        result = runner.run(self.contexts[run.name].process(argv), timeout=max(timeout, 5.0))
        if result.exit_code == 0:
            self._probe_failures[run.name] = 0
            run.ready = True
        else:
            output = (result.stdout + result.stderr).decode(errors="replace")
            self.events.append(("Warning", "Unhealthy", f"Readiness probe failed: {output}", f"spec.containers{{{run.name}}}"))
            failures = self._probe_failures.get(run.name, 0) + 1
            self._probe_failures[run.name] = failures
            if failures >= int(probe.get("failureThreshold") or 3) or not run.ready:
                run.ready = False
        period = float(probe.get("periodSeconds") or 10)
        self._due[run.name] = now + period
        return period

    def status(self, previous: Mapping[str, Any] | None) -> dict[str, Any]:
        phase = "Failed" if self.failed else self.phase
        return pod_status(
            phase=phase,
            init=self.init,
            main=self.main,
            pod_ip=self.pod_ip,
            host_ip=self.host_ip,
            start_time=self.start_time,
            previous=previous,
        )

    def pending_status(self, previous: Mapping[str, Any] | None, message: str) -> dict[str, Any]:
        """Status while the sandbox cannot be created yet (e.g. a claim is missing)."""
        status = pod_status(
            phase="Pending",
            init=self.init,
            main=self.main,
            pod_ip="",
            host_ip=self.host_ip,
            start_time=self.start_time,
            previous=previous,
        )
        for key in ("podIP", "podIPs"):
            status.pop(key, None)
        for cs in status["containerStatuses"]:
            if message:
                cs["state"] = {"waiting": {"reason": "ContainerCreating", "message": message}}
        return status
