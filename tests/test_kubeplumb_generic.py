"""kubeplumb is Kubernetes only: its code names neither KubeDirector nor gitops-kd (the import contracts check imports)."""

from __future__ import annotations

import re
from pathlib import Path

PLUMBING = Path(__file__).resolve().parents[1] / "kubeplumb"
FOREIGN = re.compile(r"kubedirector|gitops|kdsim|kdcrds|\bkd\b", re.IGNORECASE)


def test_the_shared_plumbing_names_no_kubedirector_and_no_gitops_kd() -> None:
    """Invariant: a KubeDirector fact (a label, a kind, a default) never lands in the package both sides share, so
    kdsim cannot learn one from the controller through it; only the package docstring may say what it is not."""
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(PLUMBING.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if FOREIGN.search(line) and not (path.name == "__init__.py" and n == 1)
    ]
    assert not found, f"kubeplumb names KubeDirector or gitops-kd: {found}"
