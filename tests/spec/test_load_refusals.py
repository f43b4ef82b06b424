"""load_manifests refuses bad files with every error named by file, field and reason."""

from __future__ import annotations

import json

from spec_factories import APP, CLUSTER, app_doc, cluster_doc, dump, load, refusals

from gitops_kd.spec import FieldError, KDApp, KDCluster, load_manifests


def _one(errors: list[FieldError]) -> FieldError:
    assert len(errors) == 1, "\n".join(map(str, errors))
    return errors[0]


def test_valid_app_and_cluster_load() -> None:
    (app,) = load("apps/kafka.yaml", app_doc())
    assert isinstance(app, KDApp) and app.source == "apps/kafka.yaml"
    (cluster,) = load("clusters/kafka-dev.yaml", cluster_doc())
    assert isinstance(cluster, KDCluster)
    assert cluster.role("broker").storage_class == "fast"
    assert cluster.role("broker").storage_size == "10Gi"
    assert cluster.role("broker").resources["limits"]["cpu"] == "1"


def test_duplicate_role_id() -> None:
    roles = [{"id": "broker", "cardinality": "1"}, {"id": "broker", "cardinality": "2+"}]
    errors = refusals("apps/kafka.yaml", dump(app_doc(roles=roles, config={"selectedRoles": [], "roleServices": []})))
    err = _one(errors)
    assert (err.file, err.field) == ("apps/kafka.yaml", "spec.roles[1].id")
    assert err.reason == 'duplicate role id "broker" (also at spec.roles[0].id)'
    assert str(err) == 'apps/kafka.yaml: spec.roles[1].id: duplicate role id "broker" (also at spec.roles[0].id)'


def test_bad_service_id_reference() -> None:
    config = {"selectedRoles": ["broker"], "roleServices": [{"roleID": "broker", "serviceIDs": ["broker", "nope"]}]}
    err = _one(refusals("apps/kafka.yaml", dump(app_doc(config=config))))
    assert err.field == "spec.config.roleServices[0].serviceIDs[1]"
    assert err.reason == 'unknown service id "nope" (services: broker, ui)'


def test_bad_role_references_in_config() -> None:
    config = {"selectedRoles": ["broker", "zk"], "roleServices": [{"roleID": "zk", "serviceIDs": []}]}
    errors = refusals("apps/kafka.yaml", dump(app_doc(config=config)))
    assert {(e.field, e.reason) for e in errors} == {
        ("spec.config.selectedRoles[1]", 'unknown role "zk" (roles: controller, broker)'),
        ("spec.config.roleServices[0].roleID", 'unknown role "zk" (roles: controller, broker)'),
    }


def test_duplicate_service_id_and_dashboard_without_scheme() -> None:
    services = [{"id": "ui", "endpoint": {"port": 1, "isDashboard": True}}, {"id": "ui", "endpoint": {"port": 2}}]
    config = {"selectedRoles": [], "roleServices": []}
    errors = refusals("apps/kafka.yaml", dump(app_doc(services=services, config=config)))
    assert {(e.field, e.reason) for e in errors} == {
        ("spec.services[1].id", 'duplicate service id "ui" (also at spec.services[0])'),
        ("spec.services[0].endpoint.urlScheme", 'required because isDashboard is true (service "ui")'),
    }


def test_bad_version() -> None:
    err = _one(refusals("apps/kafka.yaml", dump(app_doc(version="1.2.3.4"))))
    assert (err.field, err.reason) == ("spec.version", '"1.2.3.4" has 4 numeric parts; at most 3 (MAJOR.MINOR.PATCH) are allowed')


def test_unquoted_yaml_version_is_a_number() -> None:
    data = dump(app_doc()).replace(b"version: '1.0'", b"version: 1.0")
    err = _one(refusals("apps/kafka.yaml", data))
    assert err.field == "spec.version" and "must be of type string" in err.reason


def test_bad_cardinality_and_missing_image() -> None:
    roles = [{"id": "controller", "cardinality": "one"}, {"id": "broker", "cardinality": "3+"}]
    errors = refusals("apps/kafka.yaml", dump(app_doc(roles=roles, defaultImageRepoTag=None)))
    fields = {e.field: e.reason for e in errors}
    assert "spec.roles[0].cardinality" in fields
    assert fields["spec.roles[1]"] == 'role "broker" has no imageRepoTag and the app has no defaultImageRepoTag'


def test_missing_required_fields_use_apiserver_wording() -> None:
    errors = refusals("apps/kafka.yaml", dump(app_doc(distroID=None, label=None)))
    assert {(e.field, e.reason) for e in errors} == {
        ("spec.distroID", "Required value"),
        ("spec.label", "Required value"),
    }


def test_reserved_annotation_refused() -> None:
    doc = app_doc()
    doc["metadata"]["annotations"] = {"gitops-kd.io/upgrade": "{}"}
    err = _one(refusals("apps/kafka.yaml", dump(doc)))
    assert err.field == "metadata.annotations[gitops-kd.io/upgrade]"


def test_cluster_refusals() -> None:
    doc = cluster_doc(
        roles=[
            {"id": "broker", "members": -1, "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
            {"id": "broker", "members": 1, "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
        ]
    )
    doc["metadata"]["name"] = "Kafka_Dev"
    doc["metadata"]["labels"] = {"gitops-kd.io/wave": "soon"}
    errors = refusals("clusters/c.yaml", dump(doc))
    fields = {e.field: e.reason for e in errors}
    assert set(fields) == {"metadata.name", "metadata.labels[gitops-kd.io/wave]", "spec.roles[0].members", "spec.roles[1].id"}
    assert "DNS-1123 label" in fields["metadata.name"]
    assert fields["spec.roles[1].id"] == 'duplicate role id "broker" (also at spec.roles[0].id)'
    assert "greater than or equal to 0" in fields["spec.roles[0].members"]


def test_cluster_wave_label() -> None:
    doc = cluster_doc()
    doc["metadata"]["labels"] = {"gitops-kd.io/wave": "3"}
    (cluster,) = load("clusters/c.yaml", doc)
    assert isinstance(cluster, KDCluster) and cluster.wave == 3


def test_unknown_field_is_refused() -> None:
    doc = cluster_doc(rolez=[])
    err = _one(refusals("clusters/c.yaml", dump(doc)))
    assert (err.field, err.reason) == ("spec.rolez", 'unknown field "rolez"')


def test_malformed_yaml_names_the_line() -> None:
    data = b"apiVersion: kubedirector.hpe.com/v1beta1\nkind: KubeDirectorApp\nmetadata:\n  name: [x\nspec: {}\n"
    err = _one(refusals("apps/broken.yaml", data))
    assert (err.file, err.field) == ("apps/broken.yaml", "")
    assert err.reason.startswith("invalid YAML: line 5, column ")
    assert str(err).startswith("apps/broken.yaml: invalid YAML: line 5")


def test_duplicate_yaml_key_refused() -> None:
    data = b"kind: KubeDirectorApp\nkind: KubeDirectorCluster\n"
    err = _one(refusals("apps/dup.yaml", data))
    assert err.reason == 'invalid YAML: line 2, column 1: duplicate key "kind" (first at line 1)'


def test_json_file_any_extension() -> None:
    (app,) = load_manifests("apps/kafka.txt", json.dumps(APP, indent="\t").encode())
    assert isinstance(app, KDApp) and app.name == "kafka"
    bad = json.dumps(APP, indent=2).replace('"kind":', '"kind"').encode()
    err = _one(refusals("apps/kafka.json", bad))
    assert err.reason.startswith("invalid JSON: line 3, column ")


def test_multi_document_file() -> None:
    data = b"---\n" + dump(APP) + b"---\n---\n" + dump(CLUSTER) + b"...\n"
    objs = load_manifests("apps/all.yaml", data)
    assert [type(o).__name__ for o in objs] == ["KDApp", "KDCluster"]
    assert [o.document for o in objs] == [1, 2]
    assert load_manifests("apps/empty.yaml", b"---\n# nothing\n---\n") == []


def test_multi_document_errors_name_the_document_and_list_all() -> None:
    bad_app = app_doc(version="x")
    bad_cluster = cluster_doc(app="")
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    errors = refusals("apps/all.yaml", dump(APP, bad_app, configmap, bad_cluster))
    assert [(e.document, e.field) for e in errors] == [
        (2, "spec.version"),
        (3, "kind"),
        (4, "spec.app"),
    ]
    assert errors[1].reason.startswith('unsupported kind "ConfigMap"')
    assert str(errors[0]).startswith("apps/all.yaml (document 2): spec.version: ")


def test_non_map_document_refused() -> None:
    err = _one(refusals("apps/list.yaml", b"- a\n- b\n"))
    assert err.reason == "a document must be a map (a Kubernetes object), not a list"


def test_body_is_a_deep_copy_and_objects_are_immutable() -> None:
    (app,) = load("apps/kafka.yaml", app_doc())
    assert isinstance(app, KDApp)
    body = app.body
    body["spec"]["roles"][0]["id"] = "changed"
    assert app.body["spec"]["roles"][0]["id"] == "controller"
    assert app.body == APP
    assert hash(app) == hash(load("apps/kafka.yaml", app_doc())[0])


def test_app_without_roles_refused() -> None:
    config = {"selectedRoles": [], "roleServices": []}
    err = _one(refusals("apps/kafka.yaml", dump(app_doc(roles=[], config=config))))
    assert (err.field, err.reason) == ("spec.roles", "must list at least one role")


def test_yaml_flow_mapping_that_is_not_json_is_read_as_yaml() -> None:
    data = json.dumps(APP).replace('"kind": "KubeDirectorApp"', "kind: KubeDirectorApp").encode()
    (app,) = load_manifests("apps/flow.yaml", data)
    assert isinstance(app, KDApp)
