"""Persistence of the store to a state directory: a JSON snapshot plus an append-only journal, reloaded on start.

A save appends only the objects written (or removed) since the last one to `store.journal` (one JSON
line each, then fsync), so its cost follows the change, not the store. When the journal has grown past
four times the snapshot's size (and at stop) the whole store is written to `store.json` atomically and the journal
emptied; that rewrite is amortised over at least as many bytes of changes. Loading replays the journal
over the snapshot; a torn last line (a crash mid-append) is ignored.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from kdsim.apiserver.storage import Key, Store

log = logging.getLogger(__name__)
STATE_FILE = "store.json"
JOURNAL_FILE = "store.journal"
MIN_COMPACT_BYTES = 1 << 20  # journal size below which it is never folded into the snapshot
COMPACT_RATIO = 4  # the journal is folded into the snapshot once it is this many times the snapshot's size


def load(store: Store, state_dir: Path) -> bool:
    """Fill `store` from `state_dir/store.json` and its journal; False when there is no saved state."""
    path = state_dir / STATE_FILE
    if not path.is_file():
        return False
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        objects = {
            (e["group"], e["plural"], e["object"]["metadata"].get("namespace", "") or "", e["object"]["metadata"]["name"]): e[
                "object"
            ]
            for e in data["objects"]
        }
        rv = int(data["resourceVersion"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path}: not a saved cluster state ({exc})") from exc
    rv = _replay(state_dir / JOURNAL_FILE, objects, rv)
    store.restore(rv, [(k[0], k[1], obj) for k, obj in sorted(objects.items())])
    return True


def _replay(journal: Path, objects: dict[Key, dict[str, Any]], rv: int) -> int:
    """Apply the journal's lines to `objects`; the resourceVersion of the last complete line (or `rv`)."""
    if not journal.is_file():
        return rv
    lines = journal.read_bytes().split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            key: Key = (entry["group"], entry["plural"], entry["namespace"], entry["name"])
            entry_rv = int(entry["rv"])
        except (ValueError, KeyError, TypeError) as exc:
            if number == len(lines):  # a torn final append
                log.warning("%s: ignoring an incomplete last line", journal)
                break
            raise ValueError(f"{journal}: line {number}: not a journal entry ({exc})") from exc
        if entry.get("object") is None:
            objects.pop(key, None)
        else:
            objects[key] = entry["object"]
        rv = max(rv, entry_rv)
    return rv


class Saver:
    """Appends the changed objects at most every `delay` seconds after a change; a full snapshot on stop()."""

    def __init__(self, store: Store, state_dir: Path, delay: float = 0.2) -> None:
        self.store = store
        self.path = state_dir / STATE_FILE
        self.journal = state_dir / JOURNAL_FILE
        self.delay = delay
        self._dirty = threading.Event()
        self._keys_lock = threading.Lock()
        self._keys: dict[Key, None] = {}
        self._save_lock = threading.Lock()
        self._snapshot_bytes = 0
        self._journal_bytes = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="apiserver-saver", daemon=True)
        store.on_write(self._changed)

    def _changed(self, key: Key) -> None:
        with self._keys_lock:
            self._keys[key] = None
        self._dirty.set()

    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.save_snapshot()
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._dirty.wait()
            if self._stopping.wait(self.delay):
                break
            self._dirty.clear()
            self.save()

    def save(self) -> None:
        """Append what changed since the last save; fold the journal into the snapshot once it is the larger."""
        with self._save_lock:
            with self._keys_lock:
                keys, self._keys = list(self._keys), {}
            if not keys:
                return
            rv, entries = self.store.entries(keys)
            data = b"".join(
                json.dumps(
                    {"rv": rv, "group": k[0], "plural": k[1], "namespace": k[2], "name": k[3], "object": obj},
                    separators=(",", ":"),
                ).encode()
                + b"\n"
                for k, obj in entries
            )
            with open(self.journal, "ab") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            self._journal_bytes += len(data)
            compact = self._journal_bytes > max(COMPACT_RATIO * self._snapshot_bytes, MIN_COMPACT_BYTES)
        if compact:
            self.save_snapshot()

    def save_snapshot(self) -> None:
        """Write the whole store to store.json atomically and empty the journal."""
        with self._save_lock:
            with self._keys_lock:
                self._keys = {}  # the snapshot holds them (taken after this point)
            snapshot = self.store.snapshot()
            tmp = self.path.with_name(self.path.name + ".tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(snapshot, fh, separators=(",", ":"))
                fh.flush()
                os.fsync(fh.fileno())
                self._snapshot_bytes = fh.tell()
            os.replace(tmp, self.path)
            self.journal.unlink(missing_ok=True)
            self._journal_bytes = 0
            log.debug("saved %d objects at resourceVersion %s", len(snapshot["objects"]), snapshot["resourceVersion"])

    def stop(self) -> None:
        self._stopping.set()
        self._dirty.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.save_snapshot()
