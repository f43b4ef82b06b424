"""Fault injection: fail the next N matching requests (500, 409, delay then 504, or apply then lose the answer)
and drop all watches."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

from kdsim import errors

LOST = "lost"  # the request is carried out, then its answer is lost (504, or an exec's connection dropped)
FORBIDDEN = "forbidden"  # 403 as RBAC answers it (what a client missing a permission sees)
KINDS = ("error", "conflict", "timeout", LOST, FORBIDDEN)
# True while the exec request being served must run, then lose its answer (set by the API server for the request's task)
ANSWER_LOST: ContextVar[bool] = ContextVar("kdsim_answer_lost", default=False)
WRITE = "write"  # verb class: create, update, patch, delete, deletecollection, and every pods/exec request
_WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass(frozen=True)
class FaultRule:
    """Fail `remaining` requests whose verb, resource and user match (`*` matches anything; verb `write` matches
    every write and exec), after letting the first `skip` matching ones through."""

    kind: str  # "error" (500), "conflict" (409), "forbidden" (RBAC's 403), "timeout" (sleep `delay`, then 504, not
    # applied) or "lost" (applied, then after `delay` answered 504; an exec runs, then its connection is closed before
    # its output and status)
    verb: str = "*"
    resource: str = "*"  # plural, or "plural/subresource", or "!plural": any other
    remaining: int = 1
    delay: float = 1.0
    message: str = "injected fault"
    user: str = "*"  # the bearer token of the client (the embedded server's notion of a user)
    skip: int = 0

    def matches(self, verb: str, resource: str, user: str = "") -> bool:
        """`statefulsets` matches the main resource only; `statefulsets/status` the subresource; `!leases`
        every resource but leases."""
        if self.verb == WRITE:
            verb_ok = verb in _WRITE_VERBS or resource == "pods/exec"
        else:
            verb_ok = self.verb in ("*", verb)
        if self.resource.startswith("!"):
            resource_ok = resource != self.resource[1:]
        else:
            resource_ok = self.resource in ("*", resource)
        return verb_ok and resource_ok and self.user in ("*", user)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "verb": self.verb,
            "resource": self.resource,
            "remaining": self.remaining,
            "delay": self.delay,
            "message": self.message,
            "user": self.user,
            "skip": self.skip,
        }


@dataclass
class FaultInjector:
    """Thread-safe set of fault rules consulted by the server before each API request."""

    _rules: list[FaultRule] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _drop_watches: Callable[[], int] | None = None

    def add(
        self,
        kind: str,
        verb: str = "*",
        resource: str = "*",
        count: int = 1,
        *,
        delay: float = 1.0,
        message: str = "injected fault",
        user: str = "*",
        skip: int = 0,
    ) -> FaultRule:
        """Fail `count` requests matching (verb, resource, user) with `kind`, after `skip` matching ones."""
        if kind not in KINDS:
            raise ValueError(f"fault kind {kind!r}: must be one of {', '.join(KINDS)}")
        if count < 1:
            raise ValueError(f"fault count {count}: must be at least 1")
        if skip < 0:
            raise ValueError(f"fault skip {skip}: must be at least 0")
        rule = FaultRule(kind, verb, resource, count, float(delay), message, user, skip)
        with self._lock:
            self._rules.append(rule)
        return rule

    def fail_next(self, count: int = 1, verb: str = "*", resource: str = "*", code: int = 500) -> FaultRule:
        """Shorthand: the next `count` matching requests get 500 (code=500) or 409 (code=409)."""
        if code not in (500, 409):
            raise ValueError(f"fault code {code}: must be 500 or 409")
        return self.add("error" if code == 500 else "conflict", verb, resource, count)

    def timeout_next(self, count: int = 1, verb: str = "*", resource: str = "*", delay: float = 1.0) -> FaultRule:
        """Shorthand: the next `count` matching requests hang for `delay` seconds, then get 504."""
        return self.add("timeout", verb, resource, count, delay=delay)

    def lose_next(self, count: int = 1, verb: str = "*", resource: str = "*", delay: float = 0.0) -> FaultRule:
        """Shorthand: the next `count` matching requests are carried out, then answered 504 after `delay` seconds
        (an exec: the command runs, then the connection is closed before its output and exit status)."""
        return self.add(LOST, verb, resource, count, delay=delay)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def rules(self) -> list[FaultRule]:
        with self._lock:
            return list(self._rules)

    def drop_watches(self) -> int:
        """Close every open watch stream; returns how many were closed."""
        return self._drop_watches() if self._drop_watches is not None else 0

    def take(self, verb: str, resource: str, user: str = "") -> FaultRule | None:
        """Consume and return the first rule matching this request, if any (a rule still skipping counts the
        request and lets it through)."""
        with self._lock:
            for i, rule in enumerate(self._rules):
                if rule.matches(verb, resource, user):
                    if rule.skip > 0:
                        self._rules[i] = replace(rule, skip=rule.skip - 1)
                        return None
                    if rule.remaining <= 1:
                        del self._rules[i]
                    else:
                        self._rules[i] = replace(rule, remaining=rule.remaining - 1)
                    return rule
        return None

    def apply_http(self, body: dict[str, Any]) -> dict[str, Any]:
        """Handle a POST /sim/faults body: {"action": "add"|"clear"|"drop-watches", ...rule fields}."""
        action = body.get("action", "add")
        if action == "clear":
            self.clear()
            return {"cleared": True}
        if action == "drop-watches":
            return {"dropped": self.drop_watches()}
        if action == "add":
            try:
                rule = self.add(
                    str(body.get("kind", "error")),
                    str(body.get("verb", "*")),
                    str(body.get("resource", "*")),
                    int(body.get("count", 1)),
                    delay=float(body.get("delay", 1.0)),
                    message=str(body.get("message", "injected fault")),
                    user=str(body.get("user", "*")),
                    skip=int(body.get("skip", 0)),
                )
            except (TypeError, ValueError) as exc:
                raise errors.bad_request(f"/sim/faults: {exc}") from None
            return rule.to_dict()
        raise errors.bad_request(f'/sim/faults: unknown action "{action}" (add, clear, drop-watches)')


def error_for(
    rule: FaultRule,
    resource: str,
    name: str,
    group: str,
    *,
    verb: str = "",
    user: str = "",
    namespace: str = "",
    rbac_resource: str = "",
) -> errors.ApiError:
    """The ApiError an injected rule produces (after the delay, for timeouts; after the request, for a lost answer);
    a "forbidden" one is worded as RBAC's 403 (`rbac_resource`: the plural, or plural/subresource)."""
    if rule.kind == FORBIDDEN:
        what = f'{resource} "{name}"' if name else resource
        where = f' in the namespace "{namespace}"' if namespace else ""
        return errors.ApiError(
            403,
            "Forbidden",
            f'{what} is forbidden: User "{user}" cannot {verb} resource '
            f'"{rbac_resource or resource}" in API group "{group}"{where}',
            {"name": name, "kind": resource, "group": group},
        )
    if rule.kind == "conflict":
        return errors.conflict(resource, name or "unknown", group)
    if rule.kind in ("timeout", LOST):
        return errors.timeout()
    return errors.internal(rule.message)
