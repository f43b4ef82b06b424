"""Persistence of the store to a state directory: debounced, atomic JSON snapshots, reloaded on start."""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from kdsim.apiserver.storage import Store

log = logging.getLogger(__name__)
STATE_FILE = "store.json"


def load(store: Store, state_dir: Path) -> bool:
    """Fill `store` from `state_dir/store.json`; False when there is no saved state."""
    path = state_dir / STATE_FILE
    if not path.is_file():
        return False
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        entries = [(e["group"], e["plural"], e["object"]) for e in data["objects"]]
        rv = int(data["resourceVersion"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a saved cluster state ({exc})") from exc
    store.restore(rv, entries)
    return True


class Saver:
    """Saves the store at most every `delay` seconds after a change, and once more on stop()."""

    def __init__(self, store: Store, state_dir: Path, delay: float = 0.2) -> None:
        self.store = store
        self.path = state_dir / STATE_FILE
        self.delay = delay
        self._dirty = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="apiserver-saver", daemon=True)
        store.on_change(self._dirty.set)

    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._dirty.wait()
            if self._stopping.wait(self.delay):
                break
            self._dirty.clear()
            self.save()

    def save(self) -> None:
        snapshot = self.store.snapshot()
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(snapshot, fh, separators=(",", ":"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        log.debug("saved %d objects at resourceVersion %s", len(snapshot["objects"]), snapshot["resourceVersion"])

    def stop(self) -> None:
        self._stopping.set()
        self._dirty.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.save()
