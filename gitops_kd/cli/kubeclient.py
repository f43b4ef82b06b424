"""The API client of every cluster command: kubeconfig, context or in-cluster account, and one-line errors for
what stops a command from reaching the cluster (like kubectl's, with what to do)."""

from __future__ import annotations

import os
from pathlib import Path

import click
import kubernetes.client
import kubernetes.config
import urllib3
import yaml
from kubernetes.client.exceptions import ApiException

from gitops_kd.cli.exits import CannotRun
from kubeplumb.rest import RestClient

DEFAULT_KUBECONFIG = "~/.kube/config"
VERSION_PROBE_TIMEOUT = 10.0  # seconds for the GET /version that tells an unreachable API server
HINT = "check --kubeconfig and --context, and that the cluster is up"


def _kubeconfig_file(kubeconfig: str | None) -> tuple[str, str] | None:
    """(the file to read, how the user named it), None when no kubeconfig is named and the default is absent."""
    if kubeconfig:
        return kubeconfig, f"--kubeconfig {kubeconfig}"
    env = os.environ.get("KUBECONFIG")
    if env:
        first = env.split(os.pathsep)[0]
        return first, f"$KUBECONFIG ({first})"
    default = Path(DEFAULT_KUBECONFIG).expanduser()
    return (str(default), DEFAULT_KUBECONFIG) if default.exists() else None


def _contexts(path: str) -> list[str]:
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return []
    entries = doc.get("contexts") if isinstance(doc, dict) else None
    return [str(c.get("name")) for c in entries or [] if isinstance(c, dict)]


def _config_problem(path: str, named: str, context: str | None, exc: Exception) -> str:
    contexts = _contexts(path)
    if context and contexts and context not in contexts:
        return (
            f'context "{context}" does not exist in {named} (its contexts: {", ".join(contexts)}); '
            "see `kubectl config get-contexts`"
        )
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        reason = f"YAML: {exc.problem} at line {exc.problem_mark.line + 1}, column {exc.problem_mark.column + 1}"
    else:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"{named}: not a usable kubeconfig: {reason}"


def load_api_client(kubeconfig: str | None, context: str | None = None) -> kubernetes.client.ApiClient:
    """--kubeconfig, else $KUBECONFIG / ~/.kube/config, else the in-cluster service account; CannotRun naming the
    file, the context or the missing account."""
    configuration = kubernetes.client.Configuration()
    found = _kubeconfig_file(kubeconfig)
    if found is None:
        try:
            kubernetes.config.load_incluster_config(client_configuration=configuration)
        except kubernetes.config.ConfigException as exc:
            raise CannotRun(
                f"no kubeconfig (--kubeconfig, $KUBECONFIG, {DEFAULT_KUBECONFIG}) and not running in a cluster: {exc}"
            ) from exc
        return kubernetes.client.ApiClient(configuration)
    path, named = found
    if not Path(path).is_file():
        raise CannotRun(
            f"{named}: no such file; name an existing kubeconfig, or leave --kubeconfig out to use "
            f"$KUBECONFIG or {DEFAULT_KUBECONFIG}"
        )
    try:
        kubernetes.config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
    except (kubernetes.config.ConfigException, yaml.YAMLError, ValueError, TypeError, OSError) as exc:
        raise CannotRun(_config_problem(path, named, context, exc)) from exc
    return kubernetes.client.ApiClient(configuration)


def server_of(api_client: kubernetes.client.ApiClient) -> str:
    """The API server's address the client talks to."""
    return str(api_client.configuration.host)


def unreachable(server: str, exc: BaseException) -> CannotRun:
    """The one-line error for an API server that did not answer."""
    reason = getattr(exc, "reason", None) or exc
    text = str(reason).split(": ", 1)[-1] if ": " in str(reason) else str(reason)
    return CannotRun(f"cannot reach the API server at {server} ({text.strip() or type(exc).__name__}); {HINT}")


def refused(server: str, exc: ApiException) -> CannotRun:
    """The one-line error for an API server that answered 401 or 403."""
    return CannotRun(
        f"the API server at {server} refused the request: {exc.status} {exc.reason} "
        "(check the credentials of --kubeconfig/--context, or the RBAC of the account)"
    )


def probe(api_client: kubernetes.client.ApiClient) -> None:
    """Reach the API server once (GET /version, no retries) so a command fails fast with one line instead of
    retrying watches; CannotRun when it does not answer or refuses the account (other answers: the caller's
    own reads say more)."""
    server = server_of(api_client)
    try:
        RestClient(api_client, timeout=VERSION_PROBE_TIMEOUT).request("GET", "/version")
    except urllib3.exceptions.HTTPError as exc:
        raise unreachable(server, exc) from exc
    except ApiException as exc:
        if exc.status in (401, 403):
            raise refused(server, exc) from exc


def as_cannot_run(exc: BaseException) -> click.ClickException | None:
    """A client-library error that escaped a command, as its one-line CannotRun (None: not a cluster error)."""
    if isinstance(exc, urllib3.exceptions.MaxRetryError):
        pool = exc.pool
        server = f"{pool.scheme}://{pool.host}:{pool.port}" if pool is not None else "the API server"
        return unreachable(server, exc)
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        conn = getattr(exc, "conn", None)
        scheme = "https" if isinstance(conn, urllib3.connection.HTTPSConnection) else "http"
        return unreachable(f"{scheme}://{conn.host}:{conn.port}" if conn is not None else "the API server", exc)
    if isinstance(exc, urllib3.exceptions.HTTPError):
        return unreachable("the API server", exc)
    if isinstance(exc, ApiException) and exc.status in (401, 403):
        return refused("the API server", exc)
    return None


__all__ = ["as_cannot_run", "load_api_client", "probe", "server_of"]
