"""Ignore rules: defaults, globs, regexes, and errors naming the source and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitops_kd.drift import IgnoreRules, RulesError


def test_defaults_cover_server_and_platform_fields() -> None:
    r = IgnoreRules.defaults()
    for kind, path in [
        ("StatefulSet", "status.readyReplicas"),
        ("StatefulSet", "spec.replicas"),
        ("Service", "metadata.managedFields"),
        ("KubeDirectorApp", "metadata.resourceVersion"),
        ("StatefulSet", "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]"),
        ("StatefulSet", "metadata.annotations[deployment.kubernetes.io/revision]"),
        ("StatefulSet", "spec.template.metadata.annotations[kubectl.kubernetes.io/restartedAt]"),
        ("Service", "spec.ports[http].targetPort"),
        ("KubeDirectorCluster", "metadata.generation"),
    ]:
        assert r.ignored(kind, path), (kind, path)
    assert not r.ignored("StatefulSet", "spec.template.spec.containers[app].image")
    assert not r.ignored("Service", "spec.ports[http].port")


def test_yaml_file_with_globs_and_regex(tmp_path: Path) -> None:
    f = tmp_path / "drift.yaml"
    f.write_text(
        "defaults: false\nignore:\n  StatefulSet:\n    - spec.template.spec.containers[*].resources\n"
        "  '*':\n    - 'regex:^metadata\\.labels\\[team'\n"
    )
    r = IgnoreRules.from_file(f)
    assert r.ignored("StatefulSet", "spec.template.spec.containers[app].resources")
    assert r.ignored("StatefulSet", "spec.template.spec.containers[app].resources.limits")  # subtree
    assert not r.ignored("Service", "spec.template.spec.containers[app].resources")
    assert r.ignored("Service", "metadata.labels[team-a]")
    assert not r.ignored("StatefulSet", "status")  # defaults off
    assert r.describe()["StatefulSet"] == ["spec.template.spec.containers[*].resources"]


@pytest.mark.parametrize(
    "doc,message",
    [
        ({"ignore": {"Deployment": ["spec"]}}, "drift.yaml: ignore.Deployment: unknown kind"),
        ({"ignore": {"Service": "spec.ports"}}, "drift.yaml: ignore.Service: must be a list"),
        ({"ignore": {"Service": ["regex:("]}}, "drift.yaml: ignore.Service[0]: invalid regular expression"),
        ({"ignore": {"Service": [""]}}, "drift.yaml: ignore.Service[0]: must be a non-empty string"),
        ({"ignore": {"Service": ["spec[["]}}, "drift.yaml: ignore.Service[0]: field path"),
        ({"defaults": "yes"}, "drift.yaml: defaults: must be true or false"),
        ({"ignores": {}}, "drift.yaml: unknown field(s) ignores"),
        (["x"], "drift.yaml: must be a mapping"),
    ],
)
def test_bad_rules_name_source_and_field(doc: object, message: str) -> None:
    with pytest.raises(RulesError) as err:
        IgnoreRules.from_dict(doc, source="drift.yaml")  # type: ignore[arg-type]
    assert message in str(err.value)


def test_unreadable_and_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="cannot read drift rules"):
        IgnoreRules.from_file(tmp_path / "missing.yaml")
    with pytest.raises(RulesError, match="not valid YAML"):
        IgnoreRules.from_yaml("ignore: [", source="x.yaml")
