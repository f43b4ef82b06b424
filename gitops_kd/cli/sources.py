"""The GitOpsKDSources `gitops-kd status` reads (applied revision, branch head, refusal) and their table."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gitops_kd.status.source import SHORT_SHA
from gitops_kd.status.sync import NamedSource, refusal_lines


def _revision(sha: str, subject: str = "") -> str:
    return (sha[:SHORT_SHA] + (f" {subject}" if subject else "")) if sha else "-"


def render_sources(sources: list[NamedSource], console: Console) -> None:
    """One row per source (applied revision with its subject, branch head, Ready), then the refusal reasons
    of every source whose head is refused."""
    table = Table(box=None, pad_edge=False)
    for col in ("SOURCE", "BRANCH", "APPLIED", "HEAD", "READY"):
        table.add_column(col, no_wrap=True)
    table.add_column("MESSAGE", overflow="fold")
    for s in sources:
        r = s.record
        ready = s.ready + (f" ({s.reason})" if s.reason and s.ready != "True" else "")
        colour = "green" if s.ready == "True" else "red" if s.failing else "cyan"
        table.add_row(
            s.ref,
            r.branch or "-",
            escape(_revision(r.applied, r.applied_subject)),
            _revision(r.attempted),
            f"[{colour}]{escape(ready)}[/]",
            escape(s.message),
        )
    console.print(table)
    for s in sources:
        lines = refusal_lines(s.record)
        if lines:
            console.print(
                f"[red]head {s.record.attempted[:SHORT_SHA]} of {escape(s.record.url)} ({s.record.branch}) "
                f"refused[/] — clusters stay at {s.record.applied[:SHORT_SHA] or '-'}:",
                highlight=False,
            )
            for line in lines:
                console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
