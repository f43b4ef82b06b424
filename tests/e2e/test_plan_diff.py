"""`gitops-kd plan` prints the whole pod-by-pod sequence of a commit with its values; `gitops-kd diff` shows live
vs Git per object and field with exit 1 on differences. Against the embedded cluster and a real Git repo."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner, Result

from gitops_kd.cli import main
from tests.e2e.harness import E2E, hello_app


def run(e2e: E2E, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--repo", str(e2e.repo), "--kubeconfig", str(e2e.cluster.kubeconfig)])


def deployed(e2e: E2E) -> None:
    e2e.start_controller()
    e2e.wait_ready_at("1.0.0")
    e2e.wait_settled()
    e2e.stop_controller()


def test_plan_lists_every_pod_of_a_three_pod_upgrade_in_order_with_its_steps(e2e: E2E) -> None:
    """Invariant: the plan shows the whole sequence, not only up to the first pod deletion: all 3 pods, the
    controller role first, highest ordinal first in a role, each with its migration command, hook and gate."""
    deployed(e2e)
    roles = e2e.pods_by_role()
    e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    done = run(e2e, "plan")
    assert done.exit_code == 0, done.output
    out = done.output
    assert "start upgrade of default/hello-dev: hello 1.0.0 -> 2.0.0" in out, out
    assert "role controller: image: 'gitops-kd/hello:1.0.0' -> 'gitops-kd/hello:2.0.0'" in out, out
    actions = out[: out.index("changes (old -> new):")]
    for head, values in re.findall(r"^\d+\. ((?:patch|apply|update|set)[^\n]*)\n((?: {5}\S[^\n]*\n)*)", actions, re.M):
        assert values and all(" -> " in v for v in values.splitlines()), f"{head}: no old -> new values\n{out}"
    assert actions.count('spec.template.spec.containers[app].image: "gitops-kd/hello:1.0.0" -> "gitops-kd/hello:2.0.0"') == 2, (
        actions
    )
    # no member Service changes before its own pod: the next actions hold none, the sequence shows each with its pod
    assert "spec.ports[http-hello-http]" not in actions, actions
    # stock KubeDirector holds the KDApp the cluster uses: not a write of the plan, a note
    assert (
        "apply KubeDirectorApp" not in actions
        and "note: KubeDirectorApp default/hello not applied: KDApp hello "
        "held at 1.0.0 by KubeDirector while in use; clusters run 2.0.0 at the StatefulSet level"
        in out
    ), out
    pods = re.findall(r"^\s+\d+\. pod (\S+) \(role (\w+)\)$", out, re.M)
    expected = [(p, "controller") for p in reversed(roles["controller"])] + [(p, "worker") for p in reversed(roles["worker"])]
    assert pods == expected, out
    section = out[out.index("whole sequence") :]
    assert section.count("- delete pod ") == 3 and section.count("- migrate /var/lib/hello: /bin/sh -c 'cp -a") == 3
    assert (
        section.count("- postUpgrade hook: /bin/sh -c 'echo upgraded-to-2.0.0 > /var/lib/hello/upgrade.log' (timeout 60s)") == 3
    ), section
    assert section.count("- gate: /bin/sh -c 'grep -q upgraded-to-2.0.0 /var/lib/hello/upgrade.log' every 2s") == 3
    assert "podReadyTimeoutSeconds 300" in section and "wave 0:" in section
    for worker in roles["worker"]:  # each worker's own Service moves right after its pod is deleted, not before
        pod = section[section.index(f". pod {worker} (role worker)") :]
        steps = pod[: pod.index("- wait for ")].splitlines()
        assert steps[1].strip().startswith(f"- delete pod {worker} "), steps
        assert steps[2].strip() == (
            f"- its Service s-{worker}: ports http-hello-http 8080 -> http-hello-http 8081, as the pod goes (not before)"
        ), steps
    assert section.count("- init container, persisted data: /etc keep, /opt/hello/cache discard, /var/lib/hello migrate") == 3, (
        section
    )


def test_diff_exit_codes_and_field_values(e2e: E2E) -> None:
    """Invariant: `diff` exits 0 only when live matches Git, 1 with differences (each object and field with the
    live and the Git value), 2 when the commit is refused; it reads only (the live app stays at 1.0.0)."""
    deployed(e2e)
    same = run(e2e, "diff")
    assert same.exit_code == 0 and "no differences from commit" in same.output, same.output
    e2e.commit({"apps/hello.yaml": e2e.template("examples/hello-2.0.0.yaml")}, "hello 2.0.0")
    differs = run(e2e, "diff")
    assert differs.exit_code == 1, differs.output
    out = differs.output
    assert (
        "~ KubeDirectorApp" not in out
        and "note: KubeDirectorApp default/hello not applied: KDApp hello held at 1.0.0 by KubeDirector while in use" in out
    ), out  # stock KubeDirector holds it: neither drift nor a write
    assert re.search(r"^~ StatefulSet default/kdss-\S+ \(cluster hello-dev, role worker\)$", out, re.M), out
    assert 'spec.template.spec.containers[app].image: "gitops-kd/hello:1.0.0" -> "gitops-kd/hello:2.0.0"' in out
    # each member Service differs from Git until its own pod is replaced: it moves with it
    held = r"^~ Service default/s-(kdss-\S+-0) \(cluster hello-dev; moves when its pod \1 is replaced\)$"
    assert re.search(held, out, re.M), out
    assert "spec.ports[http-hello-http].port: 8080 -> 8081" in out, out
    data = run(e2e, "diff", "-o", "json")
    assert data.exit_code == 1
    kinds = {d["kind"] for d in json.loads(data.output)["differences"]}
    assert kinds == {"StatefulSet", "Service"}, data.output
    # a suspended cluster is held by the controller, not in sync with Git: diff still shows it
    held = CliRunner().invoke(main, ["suspend", "hello-dev", "--kubeconfig", str(e2e.cluster.kubeconfig)])
    assert held.exit_code == 0, held.output
    still = run(e2e, "diff")
    assert still.exit_code == 1 and still.output == out, still.output
    assert CliRunner().invoke(main, ["resume", "hello-dev", "--kubeconfig", str(e2e.cluster.kubeconfig)]).exit_code == 0
    e2e.commit({"apps/hello.yaml": hello_app("0.9.0", upgrade=None)}, "a downgrade without a rule")
    refused = run(e2e, "diff")
    assert refused.exit_code == 1 and "refused" in refused.output, refused.output
    assert e2e.rest.get("kubedirector.hpe.com/v1beta1", "kubedirectorapps", "default", "hello")["spec"]["version"] == "1.0.0"


def test_diff_reports_a_role_statefulset_deleted_out_of_band(e2e: E2E) -> None:
    """Invariant (issue 28, 8): a role StatefulSet Git asks for that is gone from the cluster (`kubectl delete sts
    --cascade=orphan`, its pods left running) is a difference: `gitops-kd diff` names it and exits 1."""
    deployed(e2e)
    [sts] = [
        s["metadata"]["name"]
        for s in e2e.rest.list("apps/v1", "statefulsets", "default")["items"]
        if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
    ]
    assert e2e.kubectl("delete", "statefulset", sts, "--cascade=orphan").returncode == 0
    differs = run(e2e, "diff")
    assert differs.exit_code == 1, differs.output
    assert f"+ StatefulSet default/{sts} (cluster hello-dev, role worker: missing; KubeDirector creates it)" in differs.output, (
        differs.output
    )


def test_diff_shows_kubedirector_labels_removed_from_a_role_statefulset(e2e: E2E) -> None:
    """Invariant (issue 28, 4): a role StatefulSet whose kdcluster label was removed out of band is found by its
    ownerReference, and `gitops-kd diff` names the label gitops-kd puts back (not a missing StatefulSet)."""
    deployed(e2e)
    [sts] = [
        s["metadata"]["name"]
        for s in e2e.rest.list("apps/v1", "statefulsets", "default")["items"]
        if s["metadata"]["labels"]["kubedirector.hpe.com/role"] == "worker"
    ]
    assert e2e.kubectl("label", "statefulset", sts, "kubedirector.hpe.com/kdcluster-").returncode == 0
    differs = run(e2e, "diff")
    assert differs.exit_code == 1, differs.output
    assert f"StatefulSet default/{sts}" in differs.output and "missing" not in differs.output, differs.output
    assert 'metadata.labels[kubedirector.hpe.com/kdcluster]: (absent) -> "hello-dev"' in differs.output, differs.output
