"""What an import found and did (:class:`ImportReport`), shared by every importer."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Lists in messages stay readable; the report's ``details`` keep every item.
SHOWN_IN_MESSAGE = 20


@dataclass
class ImportReport:
    """What an import found and did.

    Attributes
    ----------
    kind : str
        ``"dataset"`` or ``"predictions"``.
    source : str
        The imported file.
    name : str
        Dataset name or model name.
    dry_run : bool
        True when nothing was stored by design.
    stored : bool
        True when the records were committed.
    counts : dict
        Named counts (rows read, stored, skipped, ...).
    warnings : list of str
        Notable facts that did not stop the import (Latin-1 fallback, empty continents, ...).
    problems : list of str
        Defects in the input that were skipped or would stop a real import.
    details : dict
        Full lists behind the messages (keys, line numbers, fields).
    """

    kind: str
    source: str
    name: str
    dry_run: bool = False
    stored: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy."""
        return asdict(self)


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def shorten(items: list[str]) -> str:
    """The first :data:`SHOWN_IN_MESSAGE` items, comma separated, and how many more there are."""
    shown = ", ".join(items[:SHOWN_IN_MESSAGE])
    more = len(items) - SHOWN_IN_MESSAGE
    return f"{shown}, … ({more} more)" if more > 0 else shown
