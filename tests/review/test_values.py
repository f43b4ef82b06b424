"""`gitops-kd plan`'s values: every planned action that changes a field shows its live and Git value (pure)."""

from __future__ import annotations

import re

from gitops_kd.plan import actions as A
from gitops_kd.plan import plan
from gitops_kd.review.livediff import field_diffs
from gitops_kd.review.values import PLAN_VALUE, action_values, plan_text
from gitops_kd.spec.upgrade import Gate
from tests.plan.kdworld import HELLO1, HELLO2, HELLO_DEV, T0, desired, live_cluster, observed, with_pod

CHANGES = (A.ApplyApp, A.ApplyCluster, A.SetOnDelete, A.PatchTemplate, A.PatchServicePorts)


def test_an_upgrade_plan_shows_old_and_new_values_under_each_changing_action() -> None:
    """Invariant: no action that changes a field is listed without its old -> new values (image, version,
    env, ports), and a port the template patch deletes is shown as removed, not as a raw patch directive."""
    live = live_cluster(HELLO1, HELLO_DEV)
    # kdss-worker-1 being replaced: its own Service moves with it (the others wait for their pods)
    live = with_pod(live, "kdss-worker-1", deleting=True)
    have = observed((HELLO1,), (live,))
    p = plan(desired(HELLO2, HELLO_DEV), have, now=T0)
    changing = [a for a in p.actions if isinstance(a, CHANGES)]
    # stock KubeDirector holds the KDApp the cluster uses: no ApplyApp (see the app-only plan below)
    assert {type(a) for a in changing} == {A.PatchTemplate, A.PatchServicePorts}, p.describe()
    for a in changing:
        lines = list(action_values(a, have))
        assert lines and all(" -> " in line for line in lines), (a.describe(), lines)
    text = plan_text(p, have)
    unused = observed((HELLO1,), ())
    app_only = plan_text(plan(desired(HELLO2), unused, now=T0), unused)
    assert '     spec.version: "1.0.0" -> "2.0.0"' in app_only, app_only
    assert 'spec.template.spec.containers[app].image: "gitops-kd/hello:1.0.0" -> "gitops-kd/hello:2.0.0"' in text
    assert 'spec.template.spec.initContainers[init].env[GITOPS_KD_VERSION].value: "1.0.0" -> "2.0.0"' in text
    assert 'spec.template.metadata.annotations[gitops-kd.io/app-version]: "1.0.0" -> "2.0.0"' in text, text
    assert re.search(
        r'spec\.template\.spec\.containers\[app\]\.ports\[8080\]: \{[^}]*"containerPort": 8080[^}]*\} '
        r"-> \(absent\)",
        text,
    ), text
    assert "spec.ports[http-hello-http].port: 8080 -> 8081" in text
    assert "$patch" not in text


def test_adoption_shows_the_strategy_and_a_new_init_container_cut_to_a_readable_length() -> None:
    have = observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV, managed=False),))
    p = plan(desired(HELLO1, HELLO_DEV), have, now=T0)
    strategy = [line for a in p.actions if isinstance(a, A.SetOnDelete) for line in action_values(a, have)]
    assert strategy == ['spec.updateStrategy.type: "RollingUpdate" -> "OnDelete"'] * 2, p.describe()
    patch = next(a for a in p.actions if isinstance(a, A.PatchTemplate))
    lines = list(action_values(patch, have))
    args = next(line for line in lines if line.startswith("spec.template.spec.initContainers[init].args: ["))
    assert len(args) < len("spec.template.spec.initContainers[init].args: ") + 2 * PLAN_VALUE + 60, args
    assert re.search(r"… \(\d+ characters\) -> .*… \(\d+ characters\)$", args), args
    assert (
        "spec.template.spec.containers[app].volumeMounts[/var/lib/gitops-kd]: (absent) -> "
        '{"mountPath": "/var/lib/gitops-kd", "name": "p", "subPath": ".gitops-kd"}'
    ) in lines, lines
    assert patch.describe() == f"patch pod template of StatefulSet default/{patch.statefulset} (role {patch.role})"


def test_steps_and_gates_show_what_they_run() -> None:
    step = A.RunStep(
        "default", "hello-dev", "kdss-w-0", "app", "2.0.0/kdss-w-0/hook", A.HOOK_STEP, ("/bin/sh", "-c", "echo hi > /tmp/x"), 60
    )
    assert list(action_values(step, observed((), ()))) == ["command: /bin/sh -c 'echo hi > /tmp/x' (timeout 60s)"]
    gate = A.CheckGate(
        "default", "hello-dev", "kdss-w-0", "worker", Gate(("/bin/sh", "-c", "true"), None, period_seconds=2, timeout_seconds=30)
    )
    assert list(action_values(gate, observed((), ()))) == ["probe: /bin/sh -c true (every 2s)"]
    assert list(action_values(A.DeletePod("default", "kdss-w-0", "uid", "hello-dev"), observed((), ()))) == []


def test_absent_and_empty_are_the_same_and_lists_match_by_key() -> None:
    assert field_diffs({}, None, "metadata.labels") == []
    assert field_diffs(None, [], "spec.x") == []
    found = field_diffs([{"name": "a", "value": "1"}, {"name": "b", "value": "2"}], [{"name": "b", "value": "3"}], "env")
    assert [f.describe() for f in found] == ['env[b].value: "2" -> "3"', 'env[a]: {"name": "a", "value": "1"} -> (absent)']
    assert field_diffs([{"name": "a"}], [{"name": "a"}], "env", removals=False) == []
