"""`gitops-kd validate --base REV`: what KubeDirector and the in-use rules refuse of a change, known offline.

Each repository is repo-template (hello 1.0.0, used by the KDCluster hello-dev) on ``main`` and, checked out
detached on ``pr``, the 1.0.0 -> 2.0.0 upgrade of examples/ with one more change on top.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.harness import TEMPLATE, git
from tests.review.repos import cli, finish, start

APP, CLUSTER = "apps/hello.yaml", "clusters/hello-dev.yaml"
Edit = Callable[[Path], None]


def _edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    body = yaml.safe_load(path.read_text())
    change(body)
    path.write_text(yaml.safe_dump(body, sort_keys=False))


def _role(body: dict[str, Any], rid: str) -> dict[str, Any]:
    return next(r for r in body["spec"]["roles"] if r["id"] == rid)


def pr_repo(tmp: Path, edit: Edit, base_edit: Edit | None = None) -> Path:
    """The template (with ``base_edit``) on main; on pr: hello 2.0.0 and ``edit``, HEAD detached there."""
    repo = tmp / "repo"
    shutil.copytree(TEMPLATE, repo)
    if base_edit is not None:
        base_edit(repo)
    start(repo)
    shutil.copy(repo / "examples/hello-2.0.0.yaml", repo / APP)
    edit(repo)
    return finish(repo, "change")


def validated(*args: str) -> tuple[int, list[tuple[str, str, str]]]:
    """validate's exit code and its errors as (file, field, reason)."""
    result = cli("validate", "--format", "json", *args)
    errors = json.loads(result.stdout)["errors"] if result.stdout.startswith("{") else []
    return result.exit_code, [(e["file"], e["field"], e["reason"]) for e in errors]


def _cardinality(repo: Path) -> None:
    _edit(repo / APP, lambda b: _role(b, "worker").update(cardinality="2+"))


def _role_added(repo: Path) -> None:
    _edit(repo / APP, lambda b: b["spec"]["roles"].append({"id": "extra", "cardinality": "0+"}))


def _config_package(repo: Path) -> None:
    _edit(repo / APP, lambda b: _role(b, "controller").update(configPackage={"packageURL": "file:///opt/setup.tgz"}))


def _distro(repo: Path) -> None:
    _edit(repo / APP, lambda b: b["spec"].update(distroID="gitops-kd/hello-ng"))


def _without_worker(body: dict[str, Any]) -> None:
    spec = body["spec"]
    spec["roles"] = [r for r in spec["roles"] if r["id"] != "worker"]
    if "config" in spec:
        spec["config"] = {"selectedRoles": ["controller"], "roleServices": []}
    if "upgrade" in spec:
        spec["upgrade"]["roleOrder"] = ["controller"]


def _role_removed(repo: Path) -> None:
    _edit(repo / APP, _without_worker)
    _edit(repo / CLUSTER, _without_worker)


def _no_from_rule(repo: Path) -> None:
    _edit(repo / APP, lambda b: b["spec"]["upgrade"].update({"from": [{"versions": ">=1.5.0 <2.0.0"}]}))


def _hello2(repo: Path) -> None:
    """A second app, hello2, at 1.0.0 (the base's hello under another name)."""
    text = git(repo, "show", f"HEAD:{APP}") if (repo / ".git").exists() else (TEMPLATE / APP).read_text()
    (repo / "apps/hello2.yaml").write_text(text.replace("name: hello\n", "name: hello2\n", 1))


def _app_switched(repo: Path) -> None:
    """hello-dev switched to hello2: hello at 2.0.0 under another name (the image and version differ, and its
    upgrade stanza takes clusters from 1.0.0), the switch the branch takes."""
    text = git(repo, "show", f"HEAD:{APP}") if (repo / ".git").exists() else (TEMPLATE / APP).read_text()
    text = text.replace("name: hello\n", "name: hello2\n", 1).replace('version: "1.0.0"', 'version: "2.0.0"', 1)
    text = text.replace("gitops-kd/hello:1.0.0", "gitops-kd/hello:2.0.0")
    text = text.rstrip("\n") + '\n  upgrade:\n    from:\n      - versions: ">=1.0.0 <2.0.0"\n        default: keep\n'
    (repo / "apps/hello2.yaml").write_text(text)
    _edit(repo / CLUSTER, lambda b: b["spec"].update(app="hello2"))


def _catalog(value: str) -> Edit:
    return lambda repo: _edit(repo / CLUSTER, lambda b: b["spec"].update(appCatalog=value))


def _role_resources(repo: Path) -> None:
    _edit(repo / CLUSTER, lambda b: _role(b, "worker")["resources"]["limits"].update(memory="512Mi"))


HOLDS = "KubeDirector holds KDApp hello at 1.0.0 while default/hello-dev use it"
REFUSED: dict[str, tuple[Edit, Edit | None, str, str, str]] = {
    # case: (edit on pr, edit on main, file, field, a piece of the reason)
    "cardinality": (_cardinality, None, APP, "spec.roles[worker].cardinality", f"'1+' -> '2+': {HOLDS}"),
    "role added": (_role_added, None, APP, "spec.roles[extra]", f"role extra added: {HOLDS}"),
    "config package": (
        _config_package,
        None,
        APP,
        "spec.roles[controller].configPackage",
        "KubeDirector runs the setup of the KDApp it holds at 1.0.0",
    ),
    "distroID": (_distro, None, APP, "spec.distroID", 'changing distroID from "gitops-kd/hello" to '),
    "role removed": (
        _role_removed,
        None,
        APP,
        "spec.roles[worker]",
        'role "worker" is removed but KubeDirectorCluster default/hello-dev has 2 member(s) in it',
    ),
    "no from rule": (_no_from_rule, None, APP, "spec.upgrade.from", "no from[] rule matches the live version 1.0.0"),
    "spec.app": (_app_switched, None, CLUSTER, "spec.app", '("The app property is read-only.")'),
    "spec.appCatalog": (
        _catalog("system"),
        _catalog("local"),
        CLUSTER,
        "spec.appCatalog",
        '"The appCatalog property is read-only."',
    ),
    "role property": (
        _role_resources,
        None,
        CLUSTER,
        "spec.roles[1].resources",
        '"Role(worker) properties other than the members count cannot be modified while role members exist." (resources changed',
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_stock_kubedirector_refusals_of_a_change(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Invariant: validate --base refuses (exit 1, file, field and reason) every change stock KubeDirector or the
    in-use rules refuse, with the controller's own refusal: `plan --base` (the same rules, run by the planner)
    names exactly the same; without --base the same files are valid."""
    edit, base_edit, file, field, reason = REFUSED[case]
    repo = pr_repo(tmp_path, edit, base_edit)
    monkeypatch.chdir(repo)
    assert validated()[0] == 0
    code, errors = validated("--base", "main")
    assert code == 1 and [(f, fd) for f, fd, _ in errors] == [(file, field)] and reason in errors[0][2], errors
    plan = cli("plan", "--base", "main", "--head", "HEAD", "--format", "json")
    assert plan.exit_code == 1
    assert [(r["file"], r["field"], r["reason"]) for r in json.loads(plan.stdout)["refusals"]] == errors
    by_rev = validated("--repo", str(repo), "--rev", "HEAD", "--base", "main")
    assert by_rev == (1, errors)


def test_errors_are_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = pr_repo(tmp_path, _role_resources)
    monkeypatch.chdir(repo)
    result = cli("validate", "--base", "main")
    lines = (repo / CLUSTER).read_text().splitlines()
    worker = next(i for i, t in enumerate(lines) if "id: worker" in t)
    line = next(i for i, t in enumerate(lines) if i > worker and "resources:" in t) + 1
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].startswith(f"{CLUSTER}:{line}:5: spec.roles[1].resources: ")


def _spare_role(repo: Path) -> None:
    """A role "spare" (0 or more members) in hello 1.0.0 and 2.0.0, without members in hello-dev."""
    for app in (APP, "examples/hello-2.0.0.yaml"):
        _edit(repo / app, lambda b: b["spec"]["roles"].append({"id": "spare", "cardinality": "0+"}))
    _edit(
        repo / CLUSTER,
        lambda b: b["spec"]["roles"].append(
            {"id": "spare", "members": 0, "resources": {"limits": {"cpu": "1", "memory": "512Mi"}}}
        ),
    )


def _spare_resources(repo: Path) -> None:
    _edit(repo / CLUSTER, lambda b: _role(b, "spare")["resources"]["limits"].update(memory="1Gi"))


ACCEPTED: dict[str, tuple[Edit, Edit | None]] = {
    "the upgrade alone": (lambda repo: None, None),
    "members only": (lambda repo: _edit(repo / CLUSTER, lambda b: _role(b, "worker").update(members=3)), None),
    "an app no cluster of the base uses": (_cardinality, lambda repo: (repo / CLUSTER).unlink()),
    "a role without members": (_spare_resources, _spare_role),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_changes_kubedirector_takes_pass(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edit, base_edit = ACCEPTED[case]
    monkeypatch.chdir(pr_repo(tmp_path, edit, base_edit))
    assert validated("--base", "main") == (0, [])


def test_live_app_upgrade_branch_takes_a_spec_app_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Invariant: on KubeDirector's live-app-upgrade branch a KDCluster's spec.app switch (its native upgrade) is
    not refused as read-only, while the rules the branch keeps from stock (a role with members changes only its
    members) still refuse."""
    monkeypatch.chdir(pr_repo(tmp_path, _app_switched))
    assert validated("--base", "main", "--kubedirector", "live-app-upgrade") == (0, [])
    assert validated("--base", "main")[0] == 1
    _role_resources(Path("."))
    code, errors = validated("--base", "main", "--kubedirector", "live-app-upgrade")
    assert code == 1 and {(f, fd) for f, fd, _ in errors} == {(CLUSTER, "spec.roles[1].resources"), (CLUSTER, "spec.app")}, (
        errors
    )  # the switch alone
    monkeypatch.setenv("GITOPS_KD_KUBEDIRECTOR", "live-app-upgrade")
    assert validated("--base", "main")[0] == 1
    assert validated("--base", "main", "--kubedirector", "stock")[1][0][1] == "spec.app"


def test_live_app_upgrade_branch_refuses_a_switch_as_the_branch_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Invariant: validate judges a spec.app switch with the controller's own branch rules (diff/switch.py): a
    switch to an app at the same version is refused with the branch's reason, as the controller would refuse it."""
    monkeypatch.chdir(
        pr_repo(tmp_path, lambda repo: (_hello2(repo), _edit(repo / CLUSTER, lambda b: b["spec"].update(app="hello2"))))
    )
    code, errors = validated("--base", "main", "--kubedirector", "live-app-upgrade")
    assert code == 1 and [(f, fd) for f, fd, _ in errors] == [(CLUSTER, "spec.app")], errors
    assert "live-app-upgrade branch refuses it" in errors[0][2], errors


def test_a_base_that_cannot_be_read_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = pr_repo(tmp_path, _cardinality)
    monkeypatch.chdir(repo)
    result = cli("validate", "--base", "no-such-rev")
    assert result.exit_code == 2 and "--base no-such-rev" in result.stderr and "unknown revision" in result.stderr
    (repo / "apps/broken.yaml").write_text("kind: [unclosed\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "broken")
    (repo / "apps/broken.yaml").unlink()
    result = cli("validate", "--base", "HEAD", "apps/hello.yaml")
    assert result.exit_code == 2 and "error: --base HEAD:" in result.stderr and "apps/broken.yaml" in result.stderr
    shutil.copytree(repo / "apps", repo / "sub/apps")
    result = cli("validate", "--base", "main", "sub")
    assert result.exit_code == 2 and "is not the top of a Git repository" in result.stderr
