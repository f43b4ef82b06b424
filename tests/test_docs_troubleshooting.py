"""docs/troubleshooting.md keeps up with the code: every Stalled (and Reconciling) reason the code can write has a section.

The reasons are taken from the code, not from a list kept here: every call that stalls a KDRollout or a
GitOpsKDSource (``Stall(...)``, ``stall_rollout``, ``_stall_with``, ``mark_stalled``, ``stall(reason=...)``) is
read with ``ast`` and its reason argument resolved to the constant it names (through local assignments and the
module's globals). A stall reason typed as a literal fails too: stall reasons are constants in
gitops_kd/constants.py (the brief's rule).
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from types import ModuleType

from tests.e2e.harness import ROOT

DOC = ROOT / "docs/troubleshooting.md"
PACKAGE = ROOT / "gitops_kd"
# callee -> position of its reason argument (None: keyword `reason` only)
STALLERS: dict[str, int | None] = {"Stall": 2, "stall_rollout": 4, "_stall_with": 3, "mark_stalled": 1, "stall": None}
RECONCILERS: dict[str, int | None] = {"mark_reconciling": 1}


def _modules() -> Iterator[tuple[ModuleType, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        yield importlib.import_module(name), ast.parse(path.read_text(encoding="utf-8"))


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _reason_arg(call: ast.Call, position: int | None) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == "reason":
            return kw.value
    return call.args[position] if position is not None and len(call.args) > position else None


def _resolve(
    node: ast.expr, local: dict[str, list[ast.expr]], params: set[str], module: ModuleType, literals: list[str], values: set[str]
) -> None:
    """Add what ``node`` evaluates to: a constant's value to ``values``, a string literal to ``literals``; a
    parameter or an attribute of one (a reason passed through) adds nothing."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        literals.append(node.value)
    elif isinstance(node, ast.IfExp):
        for branch in (node.body, node.orelse):
            _resolve(branch, local, params, module, literals, values)
    elif isinstance(node, ast.Name) and node.id in local:
        for value in local[node.id]:
            _resolve(value, local, params, module, literals, values)
    elif isinstance(node, ast.Name) and node.id not in params and isinstance(getattr(module, node.id, None), str):
        values.add(getattr(module, node.id))
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id not in params:
        owner = getattr(module, node.value.id, None)
        if isinstance(getattr(owner, node.attr, None), str):
            values.add(getattr(owner, node.attr))


def reasons(callers: dict[str, int | None]) -> tuple[set[str], list[str]]:
    """(the reasons the calls to ``callers`` in gitops_kd pass, 'module:line: literal' for each typed literal)."""
    values: set[str] = set()
    literal_sites: list[str] = []
    for module, tree in _modules():
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
            local: dict[str, list[ast.expr]] = {}
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            local.setdefault(target.id, []).append(node.value)
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call) and _callee(n) in callers):
                arg = _reason_arg(call, callers[_callee(call)])
                if arg is None:
                    continue
                literals: list[str] = []
                _resolve(arg, local, params, module, literals, values)
                literal_sites += [f"{module.__name__}:{call.lineno}: {text!r}" for text in literals]
                values.update(literals)
    return values, literal_sites


def sections() -> set[str]:
    """The reasons docs/troubleshooting.md has a section for: headings ``### `Reason` ...``."""
    return set(re.findall(r"^#{2,4} `([A-Za-z]+)`", DOC.read_text(encoding="utf-8"), re.MULTILINE))


def test_every_stall_reason_has_a_section() -> None:
    """Invariant: a reason the code can stall a KDRollout or a GitOpsKDSource with is explained in
    docs/troubleshooting.md (what it means, how it shows, what to do), and is a named constant."""
    found, literal_sites = reasons(STALLERS)
    # the scan itself works: reasons of the planner, the executor, the apply counter and the GitOpsKDSource
    assert {"PodNotReady", "StepFailed", "ApplyRefused", "CommitRefused", "RecordUntrusted"} <= found, found
    assert not literal_sites, f"stall reasons typed as literals (make them constants in gitops_kd/constants.py): {literal_sites}"
    missing = sorted(found - sections())
    assert not missing, f"stall reasons without a section in docs/troubleshooting.md: {missing}"


def test_every_reconciling_reason_has_a_section() -> None:
    """Invariant: every Reconciling reason written with a fixed value (Ready=False while gitops-kd works on it) is
    explained in docs/troubleshooting.md."""
    found, _ = reasons(RECONCILERS)
    assert {"MembersNotReady", "StatefulSetMissing", "Retrying", "Progressing"} <= found, found
    missing = sorted(found - sections())
    assert not missing, f"Reconciling reasons without a section in docs/troubleshooting.md: {missing}"
