"""The chart's PrometheusRule, evaluated by the real promtool against what a real `gitops-kd run` serves on /metrics:
a standby, a healthy leader, a refused commit, drift left by the alert-only policy, a Git repository that cannot be
read and a stalled upgrade each fire their alert (after its `for`) and nothing else; the healthy scrape fires
nothing. Every metric a rule names is one the controller exports."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops_kd.kube.leader import micro_time
from gitops_kd.testing import wait_for
from tests.deploy.runner import RunProcess
from tests.e2e.harness import E2E, NS, ROOT, exec_unavailable, hello_app, pod_ready
from tests.e2e.test_failure_policy import failing_stanza
from tests.helm.chart import one, render

SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")
TARGET = 'job="gitops-kd",instance="10.0.0.7:8080"'  # the labels a scrape of the ServiceMonitor's target adds
BEFORE = 5  # minutes of the scrape before the condition's (in the order taken) in each promtool series


def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool (Debian's prometheus package) is missing: scripts/bootstrap installs it"
    return found


def rule_groups() -> dict[str, Any]:
    rule = one(render("prometheusRule.enabled=true"), "PrometheusRule")
    return {"groups": rule["spec"]["groups"]}


def for_minutes(alert: str) -> int:
    rule = next(r for g in rule_groups()["groups"] for r in g["rules"] if r["alert"] == alert)
    return int(str(rule.get("for", "0m")).rstrip("m"))


def samples(text: str) -> dict[str, float]:
    """A /metrics page as {series: value}, each series with the scrape target's labels added."""
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m is None or line.startswith("#") or m["name"].endswith(("_created", "_bucket")):
            continue
        labels = ",".join(x for x in (m["labels"], TARGET) if x)
        out[f"{m['name']}{{{labels}}}"] = float(m["value"])
    return out


def condition_is(page: dict[str, float], reason: str) -> bool:
    """The page's gitops_kd_source_condition says the source is not Ready for ``reason``."""
    return any(
        k.startswith("gitops_kd_source_condition{") and 'type="Ready"' in k and f'reason="{reason}"' in k and v == 1.0
        for k, v in page.items()
    )


def drifting(page: dict[str, float]) -> bool:
    return any(k.startswith("gitops_kd_drift_active{") and v == 1.0 for k, v in page.items())


def refused(page: dict[str, float]) -> bool:
    return condition_is(page, "CommitRefused")


class Scrapes:
    """The controller's /metrics in each condition, taken once for the module."""

    def __init__(self) -> None:
        self.pages: dict[str, dict[str, float]] = {}


@pytest.fixture(scope="module")
def scrapes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scrapes]:
    tmp = tmp_path_factory.mktemp("rules")
    world = E2E(tmp / "world")
    found = Scrapes()
    now = micro_time(datetime.now(UTC))
    world.rest.create(
        "coordination.k8s.io/v1",
        "leases",
        NS,
        {  # another replica leads: this one is a standby
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "gitops-kd", "namespace": NS},
            "spec": {"holderIdentity": "other-replica", "leaseDurationSeconds": 3600, "acquireTime": now, "renewTime": now},
        },
    )
    proc = RunProcess(
        "ctl",
        tmp,
        world.cluster.kubeconfig,
        str(world.repo),
        "--namespace",
        NS,
        "--drift-policy",
        "alert-only",
        env={"POD_NAMESPACE": NS},
    )

    def page() -> dict[str, float]:
        return samples(proc.get("/metrics")[1])

    try:
        found.pages["standby"] = wait_for(
            "a standby's metrics", lambda: (p := page()).get(f"gitops_kd_leader{{{TARGET}}}") == 0.0 and p, 60
        )
        world.rest.delete("coordination.k8s.io/v1", "leases", NS, "gitops-kd")
        world.wait_ready_at("1.0.0", timeout=120)
        wait_for("hello-dev's pods Ready", lambda: len(ps := world.pods()) == 3 and all(pod_ready(p) for p in ps), 60)
        found.pages["healthy"] = wait_for(
            "the leader's metrics", lambda: (p := page()).get(f"gitops_kd_leader{{{TARGET}}}") == 1.0 and p, 30
        )

        world.commit({"apps/hello.yaml": hello_app("2.0.0", distroID="other/hello")}, "refused: distroID")
        found.pages["refused"] = wait_for("the source refusing the head", lambda: p if refused(p := page()) else None, 60)
        world.commit({"apps/hello.yaml": world.template("apps/hello.yaml")}, "back to 1.0.0")
        found.pages["refused-ended"] = wait_for("the refusal over", lambda: p if not refused(p := page()) else None, 60)

        sts = next(
            s["metadata"]["name"]
            for s in world.rest.list("apps/v1", "statefulsets", NS)["items"]
            if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
        )

        def drifted() -> dict[str, float] | None:
            world.kubectl("set", "image", f"statefulset/{sts}", "app=gitops-kd/hello:6.6.6")  # until it is drift
            p = page()
            return p if any(k.startswith("gitops_kd_drift_active{") and v == 1.0 for k, v in p.items()) else None

        found.pages["drift"] = wait_for("drift left by alert-only", drifted, 60, 1.0)
        assert world.kubectl("set", "image", f"statefulset/{sts}", "app=gitops-kd/hello:1.0.0").returncode == 0
        found.pages["drift-ended"] = wait_for("the drift gone", lambda: p if not drifting(p := page()) else None, 60)

        hidden = world.repo.with_name("repo-away")
        world.repo.rename(hidden)
        found.pages["git-unreadable"] = wait_for(
            "failing polls, the source GitUnreadable",
            lambda: (
                p
                if (p := page()).get(f"gitops_kd_git_failing_polls{{{TARGET}}}", 0) >= 3 and condition_is(p, "GitUnreadable")
                else None
            ),
            60,
        )
        hidden.rename(world.repo)
        found.pages["git-unreadable-ended"] = wait_for(
            "Git read again", lambda: (p := page()).get(f"gitops_kd_git_failing_polls{{{TARGET}}}", 1) == 0 and p, 60
        )
        pod = world.pods_by_role()["controller"][0]
        if exec_unavailable(world, pod) is None:
            world.commit({"apps/hello.yaml": hello_app("2.0.0", upgrade=failing_stanza("halt"))}, "broken hook")

            def stalled() -> dict[str, float] | None:
                p = page()
                return (
                    p
                    if any(k.startswith("gitops_kd_rollout_phase{") and 'phase="Stalled"' in k and v == 1.0 for k, v in p.items())
                    else None
                )

            found.pages["stalled"] = wait_for("a Stalled rollout", stalled, 120)

        yield found
    finally:
        proc.stop()
        world.close()


HOLD = 40  # minutes the condition holds in each promtool series (longer than every rule's `for`, past 30 m)
AFTER = 20  # minutes of the scrape taken once the condition ended


def series(
    before: dict[str, float], after: dict[str, float], minutes: int, ended: dict[str, float] | None = None
) -> list[dict[str, str]]:
    """promtool input: each series at its healthy value for BEFORE minutes, then at the condition's value for
    ``minutes``, then (with ``ended``) at the value of the scrape taken once the condition ended, for AFTER."""
    out = []
    pages = [before, after] + ([ended] if ended is not None else [])
    for name in sorted(set().union(*(p.keys() for p in pages))):
        head = " ".join(["_" if name not in before else f"{before[name]:g}"] * BEFORE)
        tail = "_" if name not in after else f"{after[name]:g}x{minutes - 1}"
        end = "" if ended is None else " " + " ".join(["_" if name not in ended else f"{ended[name]:g}"] * AFTER)
        out.append({"series": name, "values": f"{head} {tail}{end}"})
    return out


annotations: dict[str, dict[str, str]] = {}  # alert -> its rendered annotations, for the alert a test expects


def promtool_test(
    tmp: Path,
    before: dict[str, float],
    after: dict[str, float],
    expected: dict[str, list[tuple[int, list[dict[str, str]]]]],
    ended: dict[str, float] | None = None,
) -> None:
    """Run `promtool test rules`: alert -> [(minute, the exact labels of each firing alert)]; the condition's
    scrape holds HOLD minutes when ``ended`` (the scrape once it ended) follows, else 60."""
    rules = tmp / "rules.yaml"
    rules.write_text(yaml.safe_dump(rule_groups()))
    cases = [
        {
            "eval_time": f"{minute}m",
            "alertname": alert,
            "exp_alerts": [{"exp_labels": labels, "exp_annotations": annotations.get(alert, {})} for labels in firing],
        }
        for alert, checks in expected.items()
        for minute, firing in checks
    ]
    test = tmp / "test.yaml"
    test.write_text(
        yaml.safe_dump(
            {
                "rule_files": [str(rules)],
                "evaluation_interval": "1m",
                "tests": [
                    {
                        "interval": "1m",
                        "input_series": series(before, after, HOLD if ended is not None else 60, ended),
                        "alert_rule_test": cases,
                    }
                ],
            }
        )
    )
    out = subprocess.run([promtool(), "test", "rules", str(test)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


ALERTS = (
    "GitOpsKDRolloutStalled",
    "GitOpsKDCommitRefused",
    "GitOpsKDDriftNotReverted",
    "GitOpsKDGitUnreadable",
    "GitOpsKDLeaderMissing",
)


def test_promtool_accepts_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rule_groups()))
    out = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert {r["alert"] for g in rule_groups()["groups"] for r in g["rules"]} == set(ALERTS)


def test_every_metric_a_rule_names_is_exported(scrapes: Scrapes) -> None:
    named = {m for g in rule_groups()["groups"] for r in g["rules"] for m in re.findall(r"gitops_kd_\w+", r["expr"])}
    exported = {k.split("{")[0] for page in scrapes.pages.values() for k in page}
    assert named and named <= exported, named - exported


def test_a_healthy_leader_fires_nothing(scrapes: Scrapes, tmp_path: Path) -> None:
    healthy = scrapes.pages["healthy"]
    promtool_test(tmp_path, healthy, healthy, {alert: [(BEFORE + 30, [])] for alert in ALERTS})


@pytest.mark.parametrize(
    ("condition", "alert", "labels"),
    [
        ("standby", "GitOpsKDLeaderMissing", {}),
        ("refused", "GitOpsKDCommitRefused", {}),
        ("drift", "GitOpsKDDriftNotReverted", {"kind": "StatefulSet", "namespace": NS}),
        ("stalled", "GitOpsKDRolloutStalled", {"namespace": NS, "cluster": "hello-dev"}),
        ("git-unreadable", "GitOpsKDGitUnreadable", {}),
    ],
)
def test_each_condition_fires_its_alert_for_its_whole_life(
    scrapes: Scrapes, tmp_path: Path, condition: str, alert: str, labels: dict[str, str]
) -> None:
    """Invariant: the alert for a real condition fires once it has held for the rule's `for`, not before, with
    the labels that say where; it still fires at 30 minutes while the condition holds (computed from current state,
    not from a counter's increase) and resolves only once the scrape taken after the condition ended says so; the
    other alerts stay quiet (a stalled rollout is not a leader missing)."""
    if condition not in scrapes.pages:
        pytest.skip("the embedded node cannot exec into the app container: no hook runs, no stall")
    page = scrapes.pages[condition]
    if alert == "GitOpsKDDriftNotReverted":
        [key] = [k for k, v in page.items() if k.startswith("gitops_kd_drift_active{") and v == 1.0]
        labels = {**labels, "name": re.search(r'name="([^"]+)"', key)[1]}  # type: ignore[index]
    wait = for_minutes(alert)
    fired = BEFORE + wait + 1
    value = max((v for k, v in page.items() if k.startswith("gitops_kd_git_failing_polls{")), default=0.0)
    firing = [{"alertname": alert, "severity": severity(alert), **labels}]
    checks = [(fired, firing), (BEFORE + 30, firing)]
    annotations[alert] = {k: expand(v, labels, value) for k, v in rule_of(alert)["annotations"].items()}
    if wait:
        checks.append((BEFORE + wait - 1, []))
    ended = scrapes.pages.get(f"{condition}-ended")
    if ended is not None:
        checks += [(BEFORE + HOLD - 1, firing), (BEFORE + HOLD + 1, []), (BEFORE + HOLD + AFTER - 1, [])]
    others = {a: [(fired, [])] for a in ALERTS if a != alert}
    # the state just before: the scrape taken before it, and for the standby the healthy leader's (the leader died;
    # what is left is a standby)
    taken = [name for name in scrapes.pages if name != "standby" and not name.endswith("-ended")]
    before = scrapes.pages["healthy" if condition == "standby" else taken[taken.index(condition) - 1]]
    promtool_test(tmp_path, before, page, {alert: checks, **others}, ended)


def rule_of(alert: str) -> dict[str, Any]:
    rule: dict[str, Any] = next(r for g in rule_groups()["groups"] for r in g["rules"] if r["alert"] == alert)
    return rule


def severity(alert: str) -> str:
    return str(rule_of(alert)["labels"]["severity"])


def expand(template: str, labels: dict[str, str], value: float) -> str:
    """The annotation Prometheus renders: {{ $labels.x }} and {{ $value }} (the only template forms the rules use)."""
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m[1]], template)
    return text.replace("{{ $value }}", f"{value:g}")


def test_an_unreadable_repository_is_git_unreadable_from_the_first_poll(tmp_path: Path) -> None:
    """Invariant: a repository gitops-kd cannot read from the start (nothing on loopback port 1) is GitUnreadable
    from the first failed poll: the GitOpsKDSource says so (not RecordUntrusted), gitops_kd_git_failing_polls counts
    it, the source condition gauge says it and GitOpsKDGitUnreadable fires after its `for`; docs/troubleshooting.md's
    GitUnreadable advice is the one that applies (check the URL and credentials; deleting the record is not it)."""
    world = E2E(tmp_path / "world")
    proc = RunProcess(
        "ctl", tmp_path, world.cluster.kubeconfig, "https://127.0.0.1:1/nope.git", "--namespace", NS, env={"POD_NAMESPACE": NS}
    )
    try:
        page = wait_for(
            "the first failed poll counted",
            lambda: (p := samples(proc.get("/metrics")[1])).get(f"gitops_kd_git_failing_polls{{{TARGET}}}", 0) >= 1 and p,
            60,
        )
        page = wait_for(
            "the source GitUnreadable",
            lambda: p if condition_is(p := samples(proc.get("/metrics")[1]), "GitUnreadable") else None,
            30,
        )
        source = world.rest.get("gitops-kd.io/v1alpha1", "gitopskdsources", NS, "gitops-kd")
        ready = next(c for c in source["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "False" and ready["reason"] == "GitUnreadable", source["status"]
        assert "127.0.0.1:1" in ready["message"], ready
        assert source["status"]["gitFailures"] >= 1, source["status"]
        assert not source["status"].get("recordProblem"), source["status"]
    finally:
        proc.stop()
        world.close()
    value = page[f"gitops_kd_git_failing_polls{{{TARGET}}}"]
    annotations["GitOpsKDGitUnreadable"] = {
        k: expand(v, {}, value) for k, v in rule_of("GitOpsKDGitUnreadable")["annotations"].items()
    }
    fired = BEFORE + for_minutes("GitOpsKDGitUnreadable") + 1
    firing = [{"alertname": "GitOpsKDGitUnreadable", "severity": "critical"}]
    promtool_test(tmp_path, {}, page, {"GitOpsKDGitUnreadable": [(fired, firing), (BEFORE + 30, firing)]})
    advice = (ROOT / "docs/troubleshooting.md").read_text(encoding="utf-8")
    section = advice[advice.index("### `GitUnreadable`") :].split("\n### ")[0]
    assert "from the first" in section and "delete" not in section.lower(), section
