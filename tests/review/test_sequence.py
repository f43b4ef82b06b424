"""`plan`'s whole sequence across waves: every cluster of every wave, in wave order, each pod with its steps (pure)."""

from __future__ import annotations

import re

from gitops_kd.review.sequence import sequence_lines, sequences
from tests.plan.kdworld import HELLO1, HELLO2, HELLO_DEV, T0, desired, live_cluster, load_text, observed


def test_the_sequence_lists_every_wave_in_order_with_the_soak_between() -> None:
    """Invariant: a later wave's clusters are in the sequence too (not only the wave that starts now), after the
    earlier wave and the soak, each with all of its pods and their values."""
    body = HELLO_DEV.body
    body["metadata"] = {"name": "hello-prod", "labels": {"gitops-kd.io/wave": "1"}}
    prod = load_text("clusters/hello-prod.yaml", body)
    have = observed((HELLO1,), (live_cluster(HELLO1, HELLO_DEV), live_cluster(HELLO1, prod)))
    found = sequences(desired(HELLO2, prod, HELLO_DEV), have, now=T0)
    assert [(c.name, c.wave, len(c.pods)) for c in found] == [("hello-dev", 0, 3), ("hello-prod", 1, 3)]
    text = "\n".join(sequence_lines(found, wave_soak_seconds=600))
    order = [m.group(0) for m in re.finditer(r"wave \d:|then soak 600s before the next wave|default/hello-\w+:", text)]
    assert order == ["wave 0:", "default/hello-dev:", "then soak 600s before the next wave", "wave 1:", "default/hello-prod:"], (
        text
    )
    assert text.count("- postUpgrade hook: /bin/sh -c 'echo upgraded-to-2.0.0 > /var/lib/hello/upgrade.log'") == 6
    assert text.count("- delete pod ") == 6 and "upgrade 1.0.0 -> 2.0.0, roles in order controller, worker" in text
