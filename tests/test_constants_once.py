"""Each constant is bound once per side: no upper-case module constant re-binds a value another one already holds."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

# A side is what one program loads: gitops_kd and kdsim learn KubeDirector's names independently (a contract), so a
# value both hold is not a copy; each shares kubeplumb (Kubernetes' own names) and kdcrds.
SIDES = {"gitops_kd": ("gitops_kd", "kubeplumb", "kdcrds"), "kdsim": ("kdsim", "kubeplumb", "kdcrds")}

# The same value under different meanings (value -> why): nothing else may repeat a value.
ALLOWED = {
    "gitops_kd": {
        "gitops-kd": "the field manager, the default Lease, the revert commits' author and the Events' component",
        "Stalled": "a rollout phase, the kstatus condition type and a history entry's result: three vocabularies",
        "Succeeded": "a history entry's result and the GitOpsKDSource's last apply result",
        "Deployed": "a history entry's result and the Event reason of a first deploy",
        "Ignore": "admission.policy's UNREAD names which failurePolicy applies when none could be read",
        "app": "KubeDirector's app container and the planner's app key kind",
        "fleet": "the planner's fleet key kind and that key's string form (controller.acting.KEY)",
        "hook": "the plan's hook step kind and the web UI's pod stage (issue 30 item 2 gives the UI the plan's record)",
        "migrate": "the plan's migrate step kind and the persisted-data rule 'migrate'",
        "kubedirector.hpe.com": "KubeDirector's API group and its label/annotation domain",
        "GITOPS_KD_": "the variables gitops-kd sets in app containers (render) and those its CLI reads (cli/envvars)",
    },
    "kdsim": {
        "UID": "KubeDirector's default naming scheme is its UID scheme (DefaultNamingScheme = NamingSchemeUID)",
        "app": "KubeDirector's app container and the controller's informer index by app",
        "configured": "a KDCluster state and a member state in KubeDirector (clusterConfigured, memberConfigured)",
        "creating": "a KDCluster state and a member state in KubeDirector (clusterCreating, memberCreating)",
        "kubedirector.hpe.com": "KubeDirector's API group and its label/annotation domain",
    },
}


def _modules(package: str) -> Iterator[ModuleType]:
    root = importlib.import_module(package)
    yield root
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        yield importlib.import_module(info.name)


def _bound(module: ModuleType) -> set[str]:
    """Upper-case names a module binds itself at top level (assignments, not imports)."""
    names: set[str] = set()
    for node in ast.parse(Path(str(module.__file__)).read_text()).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign) and node.value is not None
            else []
        )
        for target in targets:
            for name in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(name, ast.Name) and name.id.strip("_").isupper() and not name.id.startswith("__"):
                    names.add(name.id)
    return names


def _comparable(value: object) -> object:
    """Strings and collections of strings, the values a re-typed literal or an alias copies; None for the rest."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, (tuple, list, frozenset, set)) and value and all(isinstance(v, str) for v in value):
        return frozenset(value) if isinstance(value, (frozenset, set)) else tuple(value)
    return None


def _same_number_twice(bindings: dict[tuple[str, object], set[str]]) -> dict[tuple[str, object], set[str]]:
    return {k: v for k, v in bindings.items() if len(v) > 1}


@pytest.mark.parametrize("side", sorted(SIDES))
def test_no_constant_value_is_bound_twice(side: str) -> None:
    """Invariant: each name and constant is defined once (the brief's rule); an alias or a re-typed literal fails."""
    values: dict[object, set[str]] = defaultdict(set)
    numbers: dict[tuple[str, object], set[str]] = defaultdict(set)
    for package in SIDES[side]:
        for module in _modules(package):
            for name in _bound(module):
                value = getattr(module, name)
                if (key := _comparable(value)) is not None:
                    values[key].add(f"{module.__name__}.{name}")
                elif isinstance(value, (int, float)) and not isinstance(value, bool):
                    numbers[(name, value)].add(module.__name__)  # a number repeats under one NAME: the same knob
    twice = {repr(k): sorted(v) for k, v in values.items() if len(v) > 1 and k not in ALLOWED[side]}
    assert not twice, f"values bound more than once on the {side} side (import the one binding): {twice}"
    assert not _same_number_twice(numbers), f"the same number under the same name: {_same_number_twice(numbers)}"
    stale = [v for v in ALLOWED[side] if len(values.get(v, ())) < 2]
    assert not stale, f"allowed duplicates that no longer exist (drop them from ALLOWED): {stale}"
