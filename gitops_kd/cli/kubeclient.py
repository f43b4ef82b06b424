"""The API client of every cluster command: kubeconfig, context or in-cluster account, and one-line errors for
what stops a command from reaching the cluster (like kubectl's, with what to do)."""

from __future__ import annotations

import os
from contextvars import ContextVar
from pathlib import Path

import click
import kubernetes.client
import kubernetes.config
import urllib3
import yaml
from kubernetes.client.exceptions import ApiException

from gitops_kd.cli.exits import CannotRun
from kubeplumb.rest import RestClient, message_of

DEFAULT_KUBECONFIG = "~/.kube/config"
VERSION_PROBE_TIMEOUT = 10.0  # seconds for the GET /version that tells an unreachable API server
HINT = "check --kubeconfig and --context, and that the cluster is up"
REFUSED_HINT = "grant it in the account's RBAC, or use other credentials (--kubeconfig, --context)"
_SERVER: ContextVar[str] = ContextVar("gitops_kd_api_server", default="the API server")


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
    shape = _shape_problem(path)
    if shape:
        raise CannotRun(f"{named}: not a usable kubeconfig: {shape}")
    try:
        kubernetes.config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
    except (kubernetes.config.ConfigException, yaml.YAMLError, ValueError, TypeError, OSError) as exc:
        raise CannotRun(_config_problem(path, named, context, exc)) from exc
    _SERVER.set(f"the API server at {configuration.host}")
    return kubernetes.client.ApiClient(configuration)


def _shape_problem(path: str) -> str:
    """Why the file cannot be a kubeconfig before the client library reads it ("" when it might be): a YAML
    document that is not a mapping with kind Config (a text line, a list)."""
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return ""  # the library's own error (with the YAML line and column) says more
    if not isinstance(doc, dict):
        what = "empty" if doc is None else f"a YAML {type(doc).__name__.replace('str', 'string')}"
        return f"the file is {what}, not a mapping with kind: Config, clusters, contexts and users"
    if doc.get("kind", "Config") != "Config":
        return f"kind is {doc.get('kind')!r}, not Config"
    return ""


def server_of(api_client: kubernetes.client.ApiClient) -> str:
    """The API server's address the client talks to."""
    return str(api_client.configuration.host)


def unreachable(server: str, exc: BaseException) -> CannotRun:
    """The one-line error for an API server that did not answer."""
    reason = getattr(exc, "reason", None) or exc
    text = str(reason).split(": ", 1)[-1] if ": " in str(reason) else str(reason)
    return CannotRun(f"cannot reach the API server at {server} ({text.strip() or type(exc).__name__}); {HINT}")


def refused(exc: ApiException, server: str | None = None) -> CannotRun:
    """The one-line error for an API server that answered 401 or 403, the same in every command: the server's own
    Status message, which names the verb, resource, namespace and user (`statefulsets.apps is forbidden: User
    "..." cannot list resource "statefulsets" in API group "apps" in the namespace "default"`)."""
    said = message_of(exc) or "no reason given"
    where = server or _SERVER.get()
    return CannotRun(f"{where} refused ({exc.status} {exc.reason}): {said}; {REFUSED_HINT}")


def api_failed(exc: ApiException, server: str | None = None) -> CannotRun:
    """The one-line error for any other answer that stops a command: refused() for 401/403, else the status and
    the server's message."""
    if exc.status in (401, 403):
        return refused(exc, server)
    said = message_of(exc)
    return CannotRun(f"{server or _SERVER.get()} answered {exc.status} {exc.reason}" + (f": {said}" if said else ""))


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
            raise refused(exc, f"the API server at {server}") from exc


def probe_lists(api_client: kubernetes.client.ApiClient, resources: list[tuple[str, str, str | None]]) -> None:
    """List each (apiVersion, plural, namespace) once (limit 1, no retries) before any watch starts, so an account
    that may not list one fails at once with refused()'s line instead of informers retrying a 403."""
    rest = RestClient(api_client, timeout=VERSION_PROBE_TIMEOUT)
    for api_version, plural, namespace in resources:
        try:
            rest.list(api_version, plural, namespace, limit=1)
        except ApiException as exc:
            if exc.status in (401, 403):
                raise refused(exc, f"the API server at {server_of(api_client)}") from exc


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
        return refused(exc)
    return None


__all__ = ["api_failed", "as_cannot_run", "load_api_client", "probe", "probe_lists", "refused", "server_of"]
