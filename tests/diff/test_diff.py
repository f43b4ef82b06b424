"""diff(): classified changes and every refusal case, on the hello app and its cluster."""

from __future__ import annotations

from dataclasses import replace

import pytest
from plan.kdworld import (
    HELLO1,
    HELLO2,
    HELLO_DEV,
    NS,
    T0,
    desired,
    live_app,
    live_cluster,
    load_text,
    observed,
)

from gitops_kd.diff import diff
from gitops_kd.observe import ObservedState
from gitops_kd.plan import plan


def app_variant(base, mutate, rel: str = "apps/hello.yaml"):
    body = base.body
    mutate(body)
    return load_text(rel, body)


def cluster_variant(mutate):
    body = HELLO_DEV.body
    mutate(body)
    return load_text("clusters/hello-dev.yaml", body)


def refusals(want, have):
    report = diff(want, have)
    p = plan(want, have, now=T0)
    assert p.actions == () and p.refusals == report.refusals  # one refusal refuses the commit
    return [(r.file, r.field) for r in report.refusals], report


def at_1_0() -> ObservedState:
    return observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV),))


def at_2_0() -> ObservedState:
    return observed((HELLO2,), (live_cluster(HELLO2, HELLO_DEV, from_version="1.0.0"),))


def test_version_bump_is_classified_per_role_and_field() -> None:
    report = diff(desired(HELLO2, HELLO_DEV), at_1_0())
    assert not report.refused
    app = report.app((NS, "hello"))
    assert (app.direction, app.live_version, app.desired_version, app.needs_apply) == ("upgrade", "1.0.0", "2.0.0", True)
    changes = {(c.role, c.field): (c.old, c.new) for c in app.changes}
    assert changes == {
        ("controller", "image"): ("gitops-kd/hello:1.0.0", "gitops-kd/hello:2.0.0"),
        ("worker", "image"): ("gitops-kd/hello:1.0.0", "gitops-kd/hello:2.0.0"),
        ("worker", "ports"): (["hello-http:8080"], ["hello-http:8081"]),
    }
    cluster = report.cluster((NS, "hello-dev"))
    assert cluster.exists and not cluster.needs_apply
    assert cluster.transition.direction == "upgrade" and cluster.transition.rules is not None
    assert [r.role for r in cluster.roles] == ["controller", "worker"]
    assert "spec.containers[app].ports[8080]" in cluster.roles[1].fields
    assert [(p.service, p.ports) for p in cluster.ports] == [
        ("s-kdss-worker-0", (("http-hello-http", 8081),)),
        ("s-kdss-worker-1", (("http-hello-http", 8081),)),
    ]
    assert "app default/hello: upgrade 1.0.0 -> 2.0.0" in report.describe()


def test_persist_dirs_cardinality_and_cluster_fields_are_classified() -> None:
    def app_edit(b):
        b["spec"]["defaultPersistDirs"] = ["/var/lib/hello"]
        b["spec"]["roles"][1]["cardinality"] = "2+"

    app = app_variant(HELLO1, app_edit)

    def cl_edit(b):
        b["spec"]["roles"][1]["resources"]["limits"]["cpu"] = "1"
        b["spec"]["roles"][1]["env"] = [{"name": "X", "value": "1"}]

    cluster = cluster_variant(cl_edit)
    report = diff(desired(app, cluster), at_1_0())
    fields = {(c.role, c.field) for c in report.app((NS, "hello")).changes}
    assert fields == {("controller", "persistDirs"), ("worker", "persistDirs"), ("worker", "cardinality")}
    cfields = {(c.role, c.field) for c in report.cluster((NS, "hello-dev")).changes}
    assert cfields == {("worker", "resources"), ("worker", "env")}
    assert report.cluster((NS, "hello-dev")).needs_apply
    # KubeDirector's webhook: a role with members may change only its member count
    assert [(r.field, r.reason.split(" (")[0]) for r in report.refusals] == [
        (
            "spec.roles[1].env",
            '"Role(worker) properties other than the members count cannot be modified while role members exist."',
        ),
        (
            "spec.roles[1].resources",
            '"Role(worker) properties other than the members count cannot be modified while role members exist."',
        ),
    ]


def test_role_without_members_may_change_and_kd_defaults_are_not_changes() -> None:
    from plan.kdworld import set_cluster

    live = live_cluster(HELLO1, HELLO_DEV)
    raw = live.raw
    from gitops_kd.spec.freeze import thaw

    body = thaw(raw)
    body["spec"]["roles"][1]["storage"]["storageClassName"] = "standard"  # defaulted by KubeDirector
    body["spec"]["roles"][1]["members"] = 0
    live = replace(live, raw=body, pods={**live.pods, "worker": ()})
    cluster = cluster_variant(lambda b: b["spec"]["roles"][1]["storage"].__setitem__("size", "9Gi"))
    assert not diff(desired(HELLO1, cluster), set_cluster(at_1_0(), live)).refused
    same = diff(desired(HELLO1, HELLO_DEV), set_cluster(at_1_0(), replace(live, pods=at_1_0().clusters[(NS, "hello-dev")].pods)))
    assert not same.refused


def test_steady_state_has_no_differences() -> None:
    report = diff(desired(HELLO1, HELLO_DEV), at_1_0())
    assert not report.app((NS, "hello")).needs_apply and report.app((NS, "hello")).changes == ()
    assert report.cluster((NS, "hello-dev")).in_sync


def test_distro_id_change_is_refused() -> None:
    app = app_variant(HELLO2, lambda b: b["spec"].__setitem__("distroID", "other/hello"))
    found, report = refusals(desired(app, HELLO_DEV), at_1_0())
    assert found == [("apps/hello.yaml", "spec.distroID")]
    assert 'from "gitops-kd/hello" to "other/hello"' in report.refusals[0].reason


def test_removing_a_role_that_has_members_is_refused() -> None:
    def edit(b):
        b["spec"]["roles"] = [r for r in b["spec"]["roles"] if r["id"] != "worker"]
        b["spec"]["config"]["selectedRoles"] = ["controller"]
        b["spec"]["config"]["roleServices"] = []

    app = app_variant(HELLO1, edit)
    cluster = cluster_variant(lambda b: b["spec"].__setitem__("roles", b["spec"]["roles"][:1]))
    found, report = refusals(desired(app, cluster), at_1_0())
    assert ("apps/hello.yaml", "spec.roles[worker]") in found
    assert "default/hello-dev has 2 member(s)" in report.refusals[0].reason


def test_downgrade_without_a_rule_in_the_live_stanza_is_refused() -> None:
    old = app_variant(HELLO1, lambda b: b["spec"].__setitem__("version", "0.9.0"))
    found, report = refusals(desired(old, HELLO_DEV), at_2_0())
    assert found == [("apps/hello.yaml", "spec.version")]
    assert "downgrade 2.0.0 -> 0.9.0 is refused" in report.refusals[0].reason
    # the live 1.0.0 has no stanza at all: no way back
    found, _ = refusals(desired(old, HELLO_DEV), at_1_0())
    assert found == [("apps/hello.yaml", "spec.version")]


def test_downgrade_with_a_rule_in_the_live_stanza_is_allowed() -> None:
    report = diff(desired(HELLO1, HELLO_DEV), at_2_0())
    assert not report.refused and report.app((NS, "hello")).direction == "downgrade"
    assert report.cluster((NS, "hello-dev")).transition.rules.action_for("/var/lib/hello").action == "restore"


def test_upgrade_from_an_unlisted_version_is_refused() -> None:
    newer = app_variant(HELLO2, lambda b: b["spec"].__setitem__("version", "3.0.0"))
    have = observed((HELLO2,), (live_cluster(HELLO2, HELLO_DEV),))
    found, report = refusals(desired(newer, HELLO_DEV), have)
    assert found == [("apps/hello.yaml", "spec.upgrade.from")]
    assert "no from[] rule matches the live version 2.0.0" in report.refusals[0].reason
    no_stanza = app_variant(HELLO1, lambda b: b["spec"].__setitem__("version", "1.1.0"))
    found, _ = refusals(desired(no_stanza, HELLO_DEV), at_1_0())
    assert found == [("apps/hello.yaml", "spec.upgrade.from")]


def test_version_rules_do_not_apply_when_no_cluster_uses_the_app() -> None:
    newer = app_variant(HELLO2, lambda b: b["spec"].__setitem__("version", "3.0.0"))
    have = observed((HELLO2,), ())
    report = diff(desired(newer), have)
    assert not report.refused and report.app((NS, "hello")).needs_apply


def test_changing_a_clusters_app_is_refused() -> None:
    other = app_variant(HELLO1, lambda b: b["metadata"].__setitem__("name", "hello-b"), "apps/hello-b.yaml")
    cluster = cluster_variant(lambda b: b["spec"].__setitem__("app", "hello-b"))
    have = observed((HELLO1, other), (live_cluster(HELLO1, HELLO_DEV),))
    found, report = refusals(desired(HELLO1, other, cluster), have)
    assert found == [("clusters/hello-dev.yaml", "spec.app")]
    assert "not allowed by KubeDirector" in report.refusals[0].reason


@pytest.mark.parametrize(
    "edit,field",
    [
        (lambda r: r["storage"].__setitem__("size", "2Gi"), "spec.roles[1].storage"),
        (lambda r: r["storage"].__setitem__("storageClassName", "fast"), "spec.roles[1].storage"),
        (lambda r: r.pop("storage"), "spec.roles[1].storage"),
        (lambda r: r.__setitem__("podLabels", {"tier": "a"}), "spec.roles[1].podLabels"),
        (lambda r: r.__setitem__("serviceLabels", {"tier": "a"}), "spec.roles[1].serviceLabels"),
    ],
)
def test_statefulset_fields_the_apiserver_will_not_update_are_refused(edit, field) -> None:
    cluster = cluster_variant(lambda b: edit(b["spec"]["roles"][1]))
    found, report = refusals(desired(HELLO1, cluster), at_1_0())
    assert found == [("clusters/hello-dev.yaml", field)]
    reason = report.refusals[0].reason
    assert "cannot be modified while role members exist" in reason
    if "storage" in field or "podLabels" in field:
        assert "apiserver refuses" in reason and "replicas" in reason


def test_several_refusals_are_all_reported() -> None:
    app = app_variant(HELLO2, lambda b: b["spec"].__setitem__("distroID", "x/y"))
    cluster = cluster_variant(lambda b: b["spec"]["roles"][0]["storage"].__setitem__("size", "5Gi"))
    found, report = refusals(desired(app, cluster), at_1_0())
    assert found == [("apps/hello.yaml", "spec.distroID"), ("clusters/hello-dev.yaml", "spec.roles[0].storage")]
    text = plan(desired(app, cluster), at_1_0(), now=T0).describe()
    assert text.startswith("refused (2 forbidden change(s)); nothing will be applied:")


def test_live_app_with_server_defaults_is_not_reapplied() -> None:
    live = live_app(HELLO1)
    raw = live.raw
    from gitops_kd.spec.freeze import thaw

    body = thaw(raw)
    body["spec"]["systemdRequired"] = False  # a CRD default
    body["status"] = {"x": 1}
    have = ObservedState({(NS, "hello"): replace(live, raw=body)}, {})
    assert not diff(desired(HELLO1), have).app((NS, "hello")).needs_apply


def test_app_catalog_is_read_only() -> None:
    from plan.kdworld import set_cluster

    from gitops_kd.spec.freeze import thaw

    live = live_cluster(HELLO1, HELLO_DEV)
    body = thaw(live.raw)
    body["spec"]["appCatalog"] = "local"  # defaulted by KubeDirector
    have = set_cluster(at_1_0(), replace(live, raw=body))
    assert not diff(desired(HELLO1, HELLO_DEV), have).refused
    cluster = cluster_variant(lambda b: b["spec"].__setitem__("appCatalog", "system"))
    found, report = refusals(desired(HELLO1, cluster), have)
    assert found == [("clusters/hello-dev.yaml", "spec.appCatalog")]
    assert "The appCatalog property is read-only." in report.refusals[0].reason


def test_a_field_removed_in_git_is_applied() -> None:
    smaller = app_variant(HELLO1, lambda b: b["spec"]["label"].pop("description"))
    report = diff(desired(smaller, HELLO_DEV), at_1_0())
    assert report.app((NS, "hello")).needs_apply and report.app((NS, "hello")).direction == "equal"
    held = plan(desired(smaller, HELLO_DEV), at_1_0(), now=T0)  # stock KubeDirector refuses it while in use
    assert held.actions == () and "KDApp hello held at 1.0.0 by KubeDirector" in held.kept[0]
    p = plan(desired(smaller), observed((HELLO1,), ()), now=T0)
    assert [type(a).__name__ for a in p.actions] == ["ApplyApp"]
    annotations = p.actions[0].body["metadata"]["annotations"]
    assert (
        annotations["gitops-kd.io/applied-spec"] != live_app(HELLO1).raw["metadata"]["annotations"]["gitops-kd.io/applied-spec"]
    )


def test_a_live_app_edited_out_of_band_is_reapplied() -> None:
    from gitops_kd.spec.freeze import thaw

    live = live_app(HELLO1)
    body = thaw(live.raw)
    body["spec"]["defaultImageRepoTag"] = "evil:1"
    have = ObservedState({(NS, "hello"): replace(live, raw=body)}, at_1_0().clusters)
    assert diff(desired(HELLO1, HELLO_DEV), have).app((NS, "hello")).needs_apply
