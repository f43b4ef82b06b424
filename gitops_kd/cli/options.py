"""The cluster options every command spells the same way, as kubectl does: --kubeconfig, --context, -n, -A."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from gitops_kd.source.budget import MAX_COMMIT_BYTES, MAX_COMMIT_FILES

F = TypeVar("F", bound=Callable[..., Any])

KUBECONFIG_HELP = "Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account)."


def budget_options(fn: F) -> F:
    """--max-commit-bytes and --max-commit-files: the work budget of one commit (gitops_kd/source/budget.py), the same
    for `run` and `validate`."""
    fn = click.option(
        "--max-commit-files",
        type=click.IntRange(min=1),
        default=MAX_COMMIT_FILES,
        show_default=True,
        help="Refuse a commit with more manifest files under apps/ and clusters/ than this, before parsing any.",
    )(fn)
    return click.option(
        "--max-commit-bytes",
        type=click.IntRange(min=1),
        default=MAX_COMMIT_BYTES,
        show_default=True,
        help="Refuse a commit whose manifests total more bytes than this after Git's decompression (a blob counted "
        "once per path naming it), before parsing any.",
    )(fn)


def kubeconfig_options(fn: F) -> F:
    """--kubeconfig and --context."""
    fn = click.option("--context", default=None, help="Kubeconfig context to use (default: its current context).")(fn)
    return click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None, help=KUBECONFIG_HELP)(fn)


def cluster_options(fn: F, *, namespace_help: str = "Namespace to read.", all_help: str = "Every namespace.") -> F:
    """--kubeconfig, --context, -n/--namespace (default "default") and -A/--all-namespaces."""
    fn = click.option("-A", "--all-namespaces", "all_namespaces", is_flag=True, help=all_help)(fn)
    fn = click.option("-n", "--namespace", default="default", show_default=True, help=namespace_help)(fn)
    return kubeconfig_options(fn)


def loadbalancer_health_option(fn: F) -> F:
    """--loadbalancer-health require|ignore: how a LoadBalancer Service without an ingress counts in HEALTH."""
    from gitops_kd.health.service import LB_POLICIES, LB_REQUIRE

    return click.option(
        "--loadbalancer-health",
        "loadbalancer_health",
        type=click.Choice(LB_POLICIES),
        default=LB_REQUIRE,
        show_default=True,
        help="How a LoadBalancer Service without an ingress counts in HEALTH: require (Progressing until the "
        "load balancer gives it one, as Argo CD) or ignore (Healthy: a cluster without a load-balancer provider, "
        "where KubeDirector's default LoadBalancer member Services never get one).",
    )(fn)
