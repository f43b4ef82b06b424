"""The pure KubeDirector renderer against the shared example KDApps and KDClusters."""

from __future__ import annotations

import pytest

from kdsim.kubedirector import names
from kdsim.kubedirector.model import SpecError, parse_app, parse_cluster
from kdsim.kubedirector.persist import init_script, persist_dirs
from kdsim.kubedirector.render import render_headless_service, render_member_service, render_statefulset
from kubeplumb.names import POD_NAME_LABEL


def _pair(shared_apps, shared_clusters, cluster_name):
    cluster_doc = shared_clusters[cluster_name]
    app = parse_app(shared_apps[cluster_doc["spec"]["app"]])
    return parse_cluster(cluster_doc, app), app


def test_centos_statefulset_labels_names_and_no_storage(shared_apps, shared_clusters):
    cluster, app = _pair(shared_apps, shared_clusters, "centos7")
    role = cluster.role("vanilla_centos")
    sts = render_statefulset(cluster, app, role, cluster_service="kdhs-abcde")
    meta, spec = sts["metadata"], sts["spec"]
    assert meta["generateName"] == "kdss-" and "name" not in meta
    assert meta["labels"] == {
        names.CLUSTER_LABEL: "centos7",
        names.APP_LABEL: "centos7x",
        names.APP_CATALOG_LABEL: "local",
        names.ROLE_LABEL: "vanilla_centos",
        names.HEADLESS_LABEL: "centos7",
    }
    assert meta["annotations"] == {names.APP_PRETTY_NAME_ANNOTATION: "CentOS 7.5"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "kubedirector.hpe.com/v1beta1",
            "kind": "KubeDirectorCluster",
            "name": "centos7",
            "uid": "uid-centos7",
            "controller": True,
            "blockOwnerDeletion": False,
        }
    ]
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["serviceName"] == "kdhs-abcde"
    assert spec["replicas"] == 0
    assert "updateStrategy" not in spec
    assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"] == meta["labels"]
    pod = spec["template"]["spec"]
    assert "initContainers" not in pod and "volumeClaimTemplates" not in spec
    (app_c,) = pod["containers"]
    assert app_c["name"] == "app" and app_c["image"] == "docker.io/bluedata/centos7:4.1"
    assert app_c["resources"]["limits"] == {"memory": "4Gi", "cpu": "1"}
    assert app_c["ports"] == [{"containerPort": 22, "name": "ssh"}]
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in app_c["env"]
    assert not any(m["name"] == names.PVC_TEMPLATE for m in app_c["volumeMounts"])
    assert {m["mountPath"] for m in app_c["volumeMounts"]} >= {"/tmp", "/run", "/run/lock", "/sys/fs/cgroup"}


def test_cassandra_storage_persisted_dirs_init_container_and_claims(shared_apps, shared_clusters):
    cluster, app = _pair(shared_apps, shared_clusters, "cassandra-persistent")
    role = cluster.role("seed")
    sts = render_statefulset(cluster, app, role, cluster_service="kdhs-x", name="kdss-fixed")
    assert sts["metadata"]["name"] == "kdss-fixed"
    # The config package (useNewSetupLayout) replaces /etc with KD's larger default set.
    dirs = [
        "/etc",
        "/opt/guestconfig",
        "/var/log/guestconfig",
        "/usr/local/bin",
        "/usr/local/lib",
        "/var/lib/cassandra",
        "/var/log/cassandra",
        "/data",
    ]
    pod = sts["spec"]["template"]["spec"]
    mounts = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "p"]
    assert [(m["mountPath"], m["subPath"]) for m in mounts] == [(d, d[1:]) for d in dirs]
    (init,) = pod["initContainers"]
    assert init["name"] == "init" and init["image"] == "docker.io/bluedata/cassandra:4.0"
    assert init["volumeMounts"] == [{"name": "p", "mountPath": "/mnt"}]
    assert init["command"] == ["/bin/sh"] and init["args"][1] == init_script(dirs)
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "p"
    assert claim["spec"]["resources"]["requests"]["storage"] == "40Gi"
    assert "storageClassName" not in claim["spec"]
    env = pod["containers"][0]["env"]
    assert {"name": "PYTHONUSERBASE", "value": "/usr/local"} in env
    assert pod["containers"][0]["securityContext"] == {"capabilities": {"add": ["SYS_RESOURCE", "IPC_LOCK"]}}


def test_persist_dirs_skip_covered_and_duplicate_dirs(shared_apps, shared_clusters):
    kafka = parse_app(shared_apps["confluentplatform55"])
    # Legacy config layout: /etc /opt /usr; the role's own persistDirs replace the app default list, and
    # /usr/share/ksql is covered by /usr.
    assert persist_dirs(kafka.role("ksqldb")) == ("/etc", "/opt", "/usr", "/var/lib/kafka-streams")
    # /opt/configscripts (app default) is covered by /opt.
    assert persist_dirs(kafka.role("broker")) == ("/etc", "/opt", "/usr", "/var/log")
    spark = parse_app(shared_apps["spark245"])
    # Legacy layout again: the spark conf dir is below /usr, /etc/hadoop below /etc.
    assert persist_dirs(spark.role("spark-master")) == ("/etc", "/opt", "/usr", "/home")
    centos = parse_app(shared_apps["centos7x"])
    assert persist_dirs(centos.role("vanilla_centos")) == ("/etc", "/home")


def test_storage_class_and_role_pod_labels(shared_apps, shared_clusters):
    doc = {**shared_clusters["centos7"], "spec": {**shared_clusters["centos7"]["spec"]}}
    doc["spec"]["roles"] = [
        {
            **doc["spec"]["roles"][0],
            "members": 2,
            "podLabels": {"team": "a"},
            "storage": {"size": "1Gi", "storageClassName": "fast"},
        }
    ]
    app = parse_app(shared_apps["centos7x"])
    cluster = parse_cluster(doc, app)
    sts = render_statefulset(cluster, app, cluster.roles[0], cluster_service="h")
    assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == "fast"
    assert sts["spec"]["template"]["metadata"]["labels"]["team"] == "a"
    assert "team" not in sts["metadata"]["labels"]
    assert sts["spec"]["selector"]["matchLabels"]["team"] == "a"


def test_services(shared_apps, shared_clusters):
    cluster, app = _pair(shared_apps, shared_clusters, "cassandra-persistent")
    headless = render_headless_service(cluster, app)
    assert headless["metadata"]["generateName"] == "kdhs-"
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["selector"] == {names.HEADLESS_LABEL: "cassandra-persistent"}
    assert headless["spec"]["publishNotReadyAddresses"] is True
    svc = render_member_service(cluster, app, cluster.role("worker"), "kdss-abcde-1")
    assert svc["metadata"]["name"] == "s-kdss-abcde-1"
    assert svc["metadata"]["labels"][names.ROLE_LABEL] == "worker"
    assert svc["spec"]["selector"] == {POD_NAME_LABEL: "kdss-abcde-1"}
    assert svc["spec"]["type"] == "LoadBalancer"  # KD's default serviceType without a KubeDirectorConfig
    assert svc["spec"]["ports"] == [{"name": "generic-ssh", "port": 22}, {"name": "cql-cassandra", "port": 9042}]


def test_role_without_ports_gets_no_member_service(shared_apps, shared_clusters):
    cluster, app = _pair(shared_apps, shared_clusters, "kafka55-persistent")
    assert render_member_service(cluster, app, cluster.role("kafka-client"), "kdss-x-0") is None


def test_crname_role_naming(shared_apps, shared_clusters):
    doc = {
        **shared_clusters["centos7"],
        "spec": {**shared_clusters["centos7"]["spec"], "namingScheme": "CrNameRole", "serviceType": "NodePort"},
    }
    app = parse_app(shared_apps["centos7x"])
    cluster = parse_cluster(doc, app)
    sts = render_statefulset(cluster, app, cluster.roles[0], cluster_service="h")
    assert sts["metadata"]["generateName"] == "centos7-vanilla-centos-"
    assert render_headless_service(cluster, app)["metadata"]["generateName"] == "centos7"
    svc = render_member_service(cluster, app, cluster.roles[0], "centos7-vanilla-centos-abcde-0")
    assert svc["metadata"]["name"] == "centos7-vanilla-centos-abcde-0"
    assert svc["spec"]["type"] == "NodePort"


def test_members_default_from_cardinality_and_bad_roles_refused(shared_apps, shared_clusters):
    cluster, _ = _pair(shared_apps, shared_clusters, "spark245-instance")
    assert cluster.role("spark-master").members == 1
    app = parse_app(shared_apps["centos7x"])
    bad = {**shared_clusters["centos7"], "spec": {"app": "centos7x", "roles": [{"id": "nope", "resources": {}}]}}
    with pytest.raises(SpecError, match=r"spec.roles\[0\].id: role 'nope' is not defined"):
        parse_cluster(bad, app)
    too_few = {**shared_clusters["centos7"], "spec": {"app": "centos7x", "roles": [{"id": "vanilla_centos", "members": 0}]}}
    with pytest.raises(SpecError, match=r"members: 0 does not satisfy the app's cardinality 1\+"):
        parse_cluster(too_few, app)


def test_every_shared_example_renders(shared_apps, shared_clusters):
    for doc in shared_clusters.values():
        app = parse_app(shared_apps[doc["spec"]["app"]])
        cluster = parse_cluster(doc, app)
        for role in cluster.roles:
            sts = render_statefulset(cluster, app, role, cluster_service="h")
            assert sts["spec"]["template"]["spec"]["containers"][0]["image"]
            assert ("volumeClaimTemplates" in sts["spec"]) == (role.storage is not None)
