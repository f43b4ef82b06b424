"""The work budget of one commit: its manifests' total size after Git's decompression and their count, checked from
the tree listing (`git ls-tree -l` sizes) before any of them is read or parsed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gitops_kd.source.layout import TreeEntry, Verdict, classify
from gitops_kd.spec import FieldError

MAX_COMMIT_BYTES = 4 * 1024 * 1024  # `--max-commit-bytes`: the manifests of one commit, summed (docs/git-source.md)
MAX_COMMIT_FILES = 2000  # `--max-commit-files`: manifest files in one commit
SHOWN_BIGGEST = 3  # the biggest files a refusal names
BUDGET_FIELD = "(commit budget)"


@dataclass(frozen=True)
class Budget:
    """At most ``max_bytes`` of manifests (each tree entry counted: one blob named by 40 paths counts 40 times, as
    it is parsed 40 times) in at most ``max_files`` manifest files."""

    max_bytes: int = MAX_COMMIT_BYTES
    max_files: int = MAX_COMMIT_FILES

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.max_files < 1:
            raise ValueError(f"commit budget {self.max_bytes} bytes / {self.max_files} files: both must be at least 1")


def budget_error(entries: Iterable[TreeEntry], budget: Budget) -> FieldError | None:
    """The refusal of a commit whose manifests (the entries the layout would parse) exceed ``budget``: naming the
    budget, the commit's total and its biggest files; None within it. Reads nothing but the listing's sizes."""
    manifests = [e for e in entries if e.size is not None and classify(e, "").verdict is Verdict.MANIFEST]
    total = sum(e.size or 0 for e in manifests)
    if total <= budget.max_bytes and len(manifests) <= budget.max_files:
        return None
    biggest = sorted(manifests, key=lambda e: (-(e.size or 0), e.path))[:SHOWN_BIGGEST]
    shown = ", ".join(f"{e.path} ({e.size} bytes)" for e in biggest)
    over = []
    if total > budget.max_bytes:
        over.append(f"{total} bytes of manifests after decompression, over the budget of {budget.max_bytes} (--max-commit-bytes)")
    if len(manifests) > budget.max_files:
        over.append(f"{len(manifests)} manifest files, over the budget of {budget.max_files} (--max-commit-files)")
    reason = f"commit refused before parsing: {'; '.join(over)}; {len(manifests)} files, {total} bytes; biggest: {shown}"
    return FieldError(biggest[0].path if biggest else ".", BUDGET_FIELD, reason)
