"""The access log names requests as kube-apiserver's RequestInfo does: a list or watch whose field selector
requires metadata.name=X (alone or with other terms) is a request for X, so RBAC's resourceNames apply to it;
any other is unnamed."""

from __future__ import annotations

import kubernetes.client

from kdsim.cluster import EmbeddedCluster


def test_a_list_or_watch_selecting_one_name_is_named_after_it(
    cluster: EmbeddedCluster, api: kubernetes.client.ApiClient, ns: str
) -> None:
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "one"}})
    core.list_namespaced_config_map(ns, field_selector="metadata.name=one")
    core.list_namespaced_config_map(ns, field_selector="metadata.name==one")
    core.list_namespaced_config_map(
        ns, watch=True, field_selector="metadata.name=one", timeout_seconds=1, _preload_content=False
    ).release_conn()
    core.list_namespaced_config_map(ns, field_selector="metadata.name=one,metadata.namespace=" + ns)
    core.list_namespaced_config_map(ns, field_selector="metadata.name!=one")
    core.list_namespaced_config_map(ns)
    seen = [
        (e.verb, e.name)
        for e in cluster.access_log.entries()
        if e.resource == "configmaps" and e.namespace == ns and e.verb in ("list", "watch")
    ]
    assert seen == [("list", "one"), ("list", "one"), ("watch", "one"), ("list", "one"), ("list", ""), ("list", "")]
