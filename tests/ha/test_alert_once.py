"""Alert text is untrusted and sent once: three `gitops-kd run --shards 3` replicas, a local Slack receiver, a commit
with a file named like a Slack mention and link. Real processes, one embedded cluster."""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from gitops_kd.testing import wait_for
from tests.drift.receiver import Receiver
from tests.e2e.harness import E2E, hello_app
from tests.ha.test_autoshard import replica
from tests.ha.test_failover import SYSTEM_NS

EVIL = "<!channel> <https:evil.example|Click to re-authenticate>"  # a file name: no slash
QUIET_WINDOW = 3.0  # seconds the receiver is watched after every replica saw the refusal: no second alert arrives


def refused_bodies(bodies: list[dict[str, object]]) -> list[dict[str, object]]:
    return [b for b in bodies if "refused-commit" in str(b.get("text", "")) and "FIRING" in str(b.get("text", ""))]


def evil_app() -> str:
    doc = yaml.safe_load(hello_app("1.0.0"))
    doc["metadata"]["name"] = "Not_A_Valid_Name"
    return yaml.safe_dump(doc)


def test_a_refused_commit_is_alerted_once_by_three_replicas_with_its_text_escaped(tmp_path: Path) -> None:
    """Invariants: one alert per event whatever the replica count (only the holder of shard 0 sends the instance
    record's alerts); alert text is data: a file named `<!channel> <https:…|Click …>` reaches Slack with &, <
    and > escaped (no mention, no link), as Slack's escaping rules ask."""
    world = E2E(tmp_path / "world")
    world.rest.create("v1", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}})
    procs = []
    try:
        with Receiver() as slack:
            procs = [replica(world, tmp_path, name, shards=3, extra=("--alert-slack", slack.url)) for name in "abc"]
            world.wait_ready_at("1.0.0", timeout=180)
            world.commit({f"apps/{EVIL}.yaml": evil_app()}, "a file named like a Slack mention and link")
            wait_for("the refused-commit alert", lambda: refused_bodies(slack.bodies), 90)
            wait_for(
                "every replica saw the refusal",
                lambda: all("refused: " in p.log() and "commit " in p.log() for p in procs),
                90,
            )
            time.sleep(QUIET_WINDOW)  # a negative: nothing else may arrive; no condition to wait for
            bodies = refused_bodies(slack.bodies)
    finally:
        for p in procs:
            p.stop()
        world.close()
    assert len(bodies) == 1, f"{len(bodies)} refused-commit alerts for one commit: {bodies}"
    sent = str(bodies[0])
    assert "<!channel>" not in sent and "<https:evil.example" not in sent, sent
    assert "&lt;!channel&gt; &lt;https:evil.example|Click to re-authenticate&gt;" in sent, sent
