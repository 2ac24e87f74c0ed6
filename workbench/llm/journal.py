"""The journal: every paid reply appended to a file beside the project the moment it arrives.

A reply is written (one JSON line, flushed and fsynced) by the worker that received it, before it
is parsed and before the database is touched. After the answers are committed to the project, a
``stored`` line names their keys. A run — or a rerun after a kill, a lock timeout or a full disk —
first stores what the journal holds and is not stored yet, then asks only for what is missing.

One journal per run identity (an ALM model name, a judge): ``.<project>.answers/<kind>-<hash>.jsonl``
beside an SQLite project (removed once everything in it is stored), under the configuration folder for a server database. The open journal
is locked (``flock``) for the lifetime of the run, so a second run of the same identity is refused
while the first is alive, and a run that finds the lock free knows that an earlier run whose job is
still ``running`` is dead.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import AglwError

if TYPE_CHECKING:
    from storage import Store


class JournalBusy(AglwError):
    """Another live run holds this journal."""


def journal_dir(store: Store) -> Path:
    """Where a project's journals live: beside an SQLite file, else under the configuration folder."""
    path = store.sqlite_path
    if path is not None:
        # Hidden, and not "<name>-journal" (SQLite's own rollback journal is called that).
        return path.with_name(f".{path.name}.answers")
    from workbench.config import config_dir
    from workbench.llm.urls import safe_url

    return config_dir() / "answers" / hashlib.sha256(str(safe_url(str(store.url))).encode()).hexdigest()[:16]


class Journal:
    """An append-only file of replies (thread-safe); use :meth:`open` and :meth:`close`.

    Lines: ``{"k": KEY, "e": ENTRY}`` for a reply, ``{"stored": [KEY, ...]}`` once committed.
    A torn last line (a kill while writing) is ignored.
    """

    def __init__(self, path: Path, label: str) -> None:
        self.path = path
        self.label = label
        self._lock = threading.Lock()
        self._handle: Any = None

    @classmethod
    def open(cls, store: Store, kind: str, identity: str, label: str) -> Journal:
        """The journal of ``identity`` for ``kind`` (``alm``, ``judge``, ...), locked for this process.

        Raises
        ------
        JournalBusy
            Another run of the same identity is alive.
        """
        folder = journal_dir(store)
        name = f"{kind}-{hashlib.sha256(identity.encode('utf-8')).hexdigest()[:20]}.jsonl"
        journal = cls(folder / name, label)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            journal._handle = open(journal.path, "a+b")  # noqa: SIM115 - held for the run's lifetime
        except OSError as exc:
            raise AglwError(f"cannot write the journal of paid answers {journal.path} ({exc.strerror or exc}); "
                            "nothing was asked. Make the project's folder writable") from None
        try:
            import fcntl

            fcntl.flock(journal._handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # pragma: no cover - Windows: no advisory lock, the journal still works
            pass
        except OSError:
            journal._handle.close()
            journal._handle = None
            raise JournalBusy(f"another run of {label} is in progress (its journal {journal.path} is in use); "
                              "wait for it to end") from None
        return journal

    def append(self, key: str, entry: dict[str, Any]) -> None:
        """Write one reply and make it durable before returning (raises ``OSError`` on a full disk)."""
        line = json.dumps({"k": key, "e": entry}, ensure_ascii=False, separators=(",", ":")) + "\n"
        self._write(line.encode("utf-8"))

    def mark_stored(self, keys: list[str]) -> None:
        """Note that the replies of ``keys`` are committed to the project (best effort: a lost
        note only makes the next run look the keys up in the project)."""
        if not keys:
            return
        try:
            self._write((json.dumps({"stored": keys}, separators=(",", ":")) + "\n").encode("utf-8"), sync=False)
        except OSError:
            pass

    def _write(self, data: bytes, *, sync: bool = True) -> None:
        with self._lock:
            handle = self._handle
            if handle is None:
                raise OSError(f"the journal {self.path} is closed")
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())

    def pending(self) -> dict[str, list[dict[str, Any]]]:
        """Replies not yet marked stored, by key, in arrival order."""
        pending: dict[str, list[dict[str, Any]]] = {}
        with self._lock:
            handle = self._handle
            if handle is None:
                return pending
            handle.flush()
            handle.seek(0)
            data = handle.read()
            handle.seek(0, os.SEEK_END)
        for raw in data.splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue  # a torn line: the reply it held never counted as received
            if not isinstance(line, dict):
                continue
            if "stored" in line:
                for key in line["stored"]:
                    pending.pop(key, None)
            elif "k" in line and isinstance(line.get("e"), dict):
                pending.setdefault(str(line["k"]), []).append(line["e"])
        return pending

    def close(self) -> None:
        """Compact the file to what is still pending (deleted when nothing is) and release it."""
        if self._handle is None:
            return
        try:
            pending = self.pending()
            if not pending:
                self.path.unlink(missing_ok=True)
                try:
                    self.path.parent.rmdir()  # only when no other journal is left in it
                except OSError:
                    pass
            else:
                tmp = self.path.with_name(self.path.name + ".tmp")
                with open(tmp, "wb") as out:
                    for key, entries in pending.items():
                        for entry in entries:
                            out.write((json.dumps({"k": key, "e": entry}, ensure_ascii=False,
                                                  separators=(",", ":")) + "\n").encode("utf-8"))
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, self.path)
        except OSError:
            pass  # the uncompacted journal is still correct
        finally:
            with self._lock:
                self._handle.close()
                self._handle = None


__all__ = ["Journal", "JournalBusy", "journal_dir"]
