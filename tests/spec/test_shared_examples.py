"""Every KubeDirector example app and cluster in the shared folder loads, validates and fits together."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitops_kd.spec import KDApp, KDCluster, check_desired_set, load_manifests


def _files(kd_shared: Path, folder: str) -> list[Path]:
    files = sorted((kd_shared / folder).iterdir())
    assert files, f"no files in {kd_shared / folder}"
    return files


def _load(kd_shared: Path, path: Path) -> list[KDApp | KDCluster]:
    return load_manifests(str(path.relative_to(kd_shared)), path.read_bytes())


def test_every_catalog_app_loads(kd_shared: Path) -> None:
    for path in _files(kd_shared, "catalog"):
        objs = _load(kd_shared, path)
        assert len(objs) == 1 and isinstance(objs[0], KDApp), path
        app = objs[0]
        assert app.roles and all(r.image for r in app.roles), path
        assert app.source == str(path.relative_to(kd_shared))
        assert app.upgrade is None


def test_every_cluster_loads_and_matches_its_app(kd_shared: Path) -> None:
    apps = [o for p in _files(kd_shared, "catalog") for o in _load(kd_shared, p)]
    clusters = [o for p in _files(kd_shared, "clusters") for o in _load(kd_shared, p)]
    assert len(clusters) == len(_files(kd_shared, "clusters"))
    assert all(isinstance(c, KDCluster) for c in clusters)
    assert check_desired_set(apps, clusters) == []  # type: ignore[arg-type]


def test_kafka_app_model(kd_shared: Path) -> None:
    (app,) = _load(kd_shared, kd_shared / "catalog" / "cr-app-kafka55.json")
    assert isinstance(app, KDApp)
    assert (app.name, app.namespace, app.version, str(app.semver)) == ("confluentplatform55", None, "1.0", "1.0.0")
    assert app.distro_id == "bluedata/confluentplatform55"
    assert app.label_name == "ConfluentPlatform5.5"
    assert app.default_image == "bluedata/kafka:1.0"
    assert app.default_persist_dirs == ("/var/log", "/opt/configscripts")
    broker = app.role("broker")
    assert (broker.cardinality, broker.min_members, broker.max_members) == ("3+", 3, None)
    assert app.role("zookeeper").max_members == 3
    assert broker.image == "bluedata/kafka:1.0"
    assert broker.service_ids == ("broker",)
    assert broker.persist_dirs is None
    # legacy config package (no useNewSetupLayout): /etc, /opt, /usr; /opt/configscripts is under /opt
    assert broker.effective_persist_dirs == ("/etc", "/opt", "/usr", "/var/log")
    # a role's own persistDirs replace the app's defaultPersistDirs (KubeDirector's admission default)
    assert app.role("zookeeper").effective_persist_dirs == ("/etc", "/opt", "/usr", "/var/lib/zookeeper")
    dash = app.service("control-center")
    assert (dash.port, dash.url_scheme, dash.is_dashboard) == (9021, "http", True)
    assert app.service("kafka-client").port is None
    with pytest.raises(KeyError, match='no role "nope"'):
        app.role("nope")


def test_spark_cluster_members_default_from_app(kd_shared: Path) -> None:
    (app,) = _load(kd_shared, kd_shared / "catalog" / "cr-app-spark245.json")
    (cluster,) = _load(kd_shared, kd_shared / "clusters" / "cr-cluster-spark245-stor.yaml")
    assert isinstance(app, KDApp) and isinstance(cluster, KDCluster)
    assert cluster.app == "spark245" and cluster.wave == 0
    master = cluster.role("spark-master")
    assert master.members is None  # absent in the file
    assert master.members_for(app.role("spark-master")) == 1  # KubeDirector: cardinality minimum
    assert cluster.role("spark-worker").members == 1
    filled = cluster.with_app_defaults(app)
    assert all(r.members is not None for r in filled.roles)
    assert cluster.body["spec"]["connections"] == {"secrets": ["hpecp-ext-auth-secret"]}
