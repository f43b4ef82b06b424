"""charts/gitops-kd, rendered and installed by the real helm: every setting of `gitops-kd run` is in its ConfigMap
and a controller started from that ConfigMap alone works; its CRDs are the packaged ones; it applies to the embedded
cluster; its Deployment is deploy/'s; its Ingress exposes /webhook and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from gitops_kd import __version__
from gitops_kd.cli.envvars import env_name
from gitops_kd.cli.run import command as run_command
from gitops_kd.crds import gitops_kd_crds
from kdsim.cluster import EmbeddedCluster
from tests.deploy.runner import die_with_parent
from tests.e2e.harness import E2E, NS
from tests.helm.chart import CHART, RELEASE_NS, ROOT, one, render, run_helm, values
from tests.kdcluster import embedded_cluster

# The flags the chart sets from its own sections (a mounted Secret or a port it opens), by the values key that does.
DERIVED = {
    "--webhook-secret-file": "webhookSecret.secretName=hook",
    "--git-credentials-dir": "gitCredentials.secretName=git",
    "--ui-auth-file": "ui.authSecret=ui",
    "--trusted-key": "trustedKeys.team\\.asc=KEY",
    "--admission-listen": "admission.enabled=true",
    "--alert-webhook": "alertSecret.existingSecret=alerts",
    "--alert-slack": "alertSecret.existingSecret=alerts",
    "--alert-alertmanager": "alertSecret.existingSecret=alerts",
    "--drift-webhook": "alertSecret.existingSecret=alerts",
}
ALERT_URL_FLAGS = ("--alert-webhook", "--alert-slack", "--alert-alertmanager", "--drift-webhook")


def run_options() -> dict[str, click.Option]:
    return {next(o for o in p.opts if o.startswith("--")): p for p in run_command.params if isinstance(p, click.Option)}


def _free_text(key: str, default: object) -> bool:
    """A config key any string is a valid value of (values.schema.json: a number such as workers is not)."""
    return isinstance(default, str) or (default is None and key != "workers")


def container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    spec = one(docs, "Deployment")["spec"]["template"]["spec"]
    [only] = spec["containers"]
    return only  # type: ignore[no-any-return]


def test_helm_lint_passes() -> None:
    out = run_helm("lint", "--strict", str(CHART))
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_flag_of_run_is_a_setting_of_the_chart() -> None:
    """A new `gitops-kd run` flag without a chart setting fails here: each flag is a key of values.yaml's `config`
    (rendered into the ConfigMap as the variable the flag reads) or one the chart derives (a Secret, a port)."""
    flags = run_options()
    config = values()["config"]
    assert set(config) == {f[2:] for f in flags} - {f[2:] for f in DERIVED}
    data = one(render(*(f"config.{k}=x" for k, v in config.items() if _free_text(k, v))), "ConfigMap", "gitops-kd-config")["data"]
    for flag, option in flags.items():
        if flag not in DERIVED and _free_text(flag[2:], config[flag[2:]]):
            assert data[env_name(option)] == "x", flag
    for flag, setting in DERIVED.items():
        env = {e["name"] for e in container(render(setting)).get("env", ())}
        assert env_name(flags[flag]) in env, (flag, setting)


def test_alert_urls_come_from_a_secret_never_the_configmap() -> None:
    """Invariant: an alert URL's credential (a Slack webhook's secret path) is never in a ConfigMap: the chart has no
    `config` setting for the alert and drift webhook URLs, and alertSecret.existingSecret feeds each one's variable
    from a key of that Secret (optional: a key left out sets nothing)."""
    flags = run_options()
    assert not {f[2:] for f in ALERT_URL_FLAGS} & set(values()["config"])
    docs = render("alertSecret.existingSecret=alerts", "alertSecret.keys.alert-slack=slack-url")
    data = one(docs, "ConfigMap", "gitops-kd-config")["data"]
    env = {e["name"]: e for e in container(docs)["env"]}
    for flag in ALERT_URL_FLAGS:
        name = env_name(flags[flag])
        assert name not in data, flag
        key = "slack-url" if flag == "--alert-slack" else flag[2:]
        assert env[name]["valueFrom"] == {"secretKeyRef": {"name": "alerts", "key": key, "optional": True}}, env[name]
    assert not {env_name(flags[f]) for f in ALERT_URL_FLAGS} & {e["name"] for e in container(render())["env"]}


def test_chart_version_follows_the_package() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == __version__


def test_the_chart_installs_the_packaged_crds_themselves() -> None:
    rendered = {d["metadata"]["name"]: d for d in render(crds=True) if d["kind"] == "CustomResourceDefinition"}
    assert rendered == {c["metadata"]["name"]: c for c in gitops_kd_crds()}


def test_the_deployment_is_deploys() -> None:
    """The chart runs the controller as deploy/ does: same pod security, probes, ports, volumes for the cache and
    the Secrets, grace period and anti-affinity (kustomize and helm users get the same controller)."""
    kustomized = subprocess.run(["kubectl", "kustomize", str(ROOT / "deploy")], capture_output=True, text=True, timeout=60)
    assert kustomized.returncode == 0, kustomized.stderr
    theirs = one([d for d in yaml.safe_load_all(kustomized.stdout) if d], "Deployment")["spec"]
    ours = one(render(), "Deployment")["spec"]
    for key in ("replicas", "selector", "strategy", "revisionHistoryLimit"):
        assert ours[key] == theirs[key], key
    pod, their_pod = ours["template"]["spec"], theirs["template"]["spec"]
    for key in ("securityContext", "affinity", "terminationGracePeriodSeconds", "serviceAccountName", "volumes"):
        assert pod[key] == their_pod[key], key
    mine, their = pod["containers"][0], their_pod["containers"][0]
    for key in ("livenessProbe", "readinessProbe", "ports", "securityContext", "resources", "volumeMounts"):
        assert mine[key] == their[key], key
    assert {e["name"]: e.get("value") for e in mine["env"] if "value" in e} == {
        "HOME": "/tmp",
        "GITOPS_KD_WEBHOOK_SECRET_FILE": "/etc/gitops-kd/webhook/secret",
        "GITOPS_KD_GIT_CREDENTIALS_DIR": "/etc/gitops-kd/git",
    }
    assert f"--webhook-secret-file={mine['env'][3]['value']}" in their["args"]


def test_the_ingress_routes_the_webhook_and_nothing_else() -> None:
    """The Ingress example must not expose the UI, /metrics or the probes: one Exact rule for /webhook."""
    assert not [d for d in render() if d["kind"] == "Ingress"]
    ingress = one(render("ingress.enabled=true", "ingress.host=hooks.example.com"), "Ingress")
    [rule] = ingress["spec"]["rules"]
    assert rule["host"] == "hooks.example.com"
    assert rule["http"]["paths"] == [
        {"path": "/webhook", "pathType": "Exact", "backend": {"service": {"name": "gitops-kd", "port": {"name": "http"}}}}
    ]
    assert "defaultBackend" not in ingress["spec"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with embedded_cluster(tmp_path_factory.mktemp("helm"), controllers=False) as c:
        created = subprocess.run(
            ["kubectl", "--kubeconfig", str(c.kubeconfig), "create", "namespace", RELEASE_NS],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert created.returncode == 0, created.stderr
        yield c


def test_every_variant_applies_to_the_api_server(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    """`helm template` output is accepted by the API server (server-side dry run) with each optional part on; the
    monitoring objects are left out (their CRDs belong to the Prometheus Operator)."""
    variants = [
        (),
        ("admission.enabled=true", "config.prune=true"),
        ("ingress.enabled=true",),
        ("ui.authSecret=gitops-kd-ui", "trustedKeys.team\\.asc=KEY", "extraArgs={--workers=4}"),
    ]
    for sets in variants:
        docs = [d for d in render(*sets) if d["kind"] not in ("ServiceMonitor", "PrometheusRule")]
        manifest = tmp_path / "chart.yaml"
        manifest.write_text(yaml.safe_dump_all(docs))
        out = subprocess.run(
            ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "apply", "--dry-run=server", "-f", str(manifest)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, (sets, out.stderr)


def test_helm_installs_upgrades_and_uninstalls(cluster: EmbeddedCluster) -> None:
    """The real helm against the API server: install (CRDs first), upgrade with a changed setting (the ConfigMap
    changes and the pod template's checksum with it), uninstall (every object of the release gone)."""
    kc = ["--kubeconfig", str(cluster.kubeconfig), "-n", RELEASE_NS]
    out = run_helm("install", "gitops-kd", str(CHART), *kc, "--set", "admission.enabled=true")
    assert out.returncode == 0, out.stderr
    cm = kubectl_json(cluster, "-n", RELEASE_NS, "get", "configmap", "gitops-kd-config")
    assert cm["data"]["GITOPS_KD_INTERVAL"] == "30"
    before = kubectl_json(cluster, "-n", RELEASE_NS, "get", "deployment", "gitops-kd")
    out = run_helm("upgrade", "gitops-kd", str(CHART), *kc, "--reuse-values", "--set", "config.interval=10")
    assert out.returncode == 0, out.stderr
    cm = kubectl_json(cluster, "-n", RELEASE_NS, "get", "configmap", "gitops-kd-config")
    assert cm["data"]["GITOPS_KD_INTERVAL"] == "10"
    after = kubectl_json(cluster, "-n", RELEASE_NS, "get", "deployment", "gitops-kd")
    checksum = "checksum/config"
    assert (
        after["spec"]["template"]["metadata"]["annotations"][checksum]
        != before["spec"]["template"]["metadata"]["annotations"][checksum]
    )
    out = run_helm("uninstall", "gitops-kd", *kc)
    assert out.returncode == 0, out.stderr
    left = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "-n",
            RELEASE_NS,
            "get",
            "deployment,service,configmap,serviceaccount,role,rolebinding",
            "-l",
            "app.kubernetes.io/instance=gitops-kd",
            "-o",
            "name",
        ],
        capture_output=True,
        text=True,
    )
    assert left.returncode == 0 and left.stdout == "", left.stdout + left.stderr
    webhooks = subprocess.run(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig), "get", "validatingwebhookconfigurations", "-o", "name"],
        capture_output=True,
        text=True,
    )
    assert "gitops-kd" not in webhooks.stdout


def kubectl_json(cluster: EmbeddedCluster, *args: str) -> dict[str, Any]:
    out = subprocess.run(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig), *args, "-o", "yaml"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    loaded: dict[str, Any] = yaml.safe_load(out.stdout)
    return loaded


def test_the_configmap_alone_runs_the_controller(tmp_path: Path) -> None:
    """`gitops-kd run` with no flag at all, its settings only the variables of the chart's rendered ConfigMap (as
    envFrom gives them to the pod), applies the repository: the ConfigMap is the controller's configuration."""
    world = E2E(tmp_path / "world")
    proc: subprocess.Popen[bytes] | None = None
    try:
        data = one(
            render(
                f"config.repo={world.repo}",
                f"config.kubeconfig={world.cluster.kubeconfig}",
                f"config.namespace={NS}",
                "config.leader-elect=false",
                "config.listen=127.0.0.1:0",
                f"config.cache-dir={tmp_path / 'cache'}",
                "config.interval=0.5",
                "config.log-level=debug",
            ),
            "ConfigMap",
            "gitops-kd-config",
        )["data"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITOPS_KD_")} | data
        with (tmp_path / "run.log").open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-c", "from gitops_kd.cli import main; main()", "run"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )
            world.wait_ready_at("1.0.0", timeout=120)
        assert proc.poll() is None
        assert " DEBUG " in (tmp_path / "run.log").read_text()  # log-level came from the ConfigMap too
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(60)
        world.close()
