"""AudioSet names and root categories for the judge prompt.

A small reader of ``ontology.json`` (a list of ``{id, name, child_ids}``) so that attribution works on
its own; it looks in ``AGLW_ONTOLOGY``, the configured ``ontology_path``, then the user cache.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from workbench.config import Settings, cache_dir
from workbench.errors import InputError


@dataclass(frozen=True)
class CategoryNames:
    """AudioSet id → display name and root-category name."""

    names: dict[str, str]
    roots: dict[str, str]
    source: str | None = None

    def name(self, audioset_id: str) -> str:
        return self.names.get(audioset_id, f"{audioset_id} (name unknown)")

    def root(self, audioset_id: str) -> str:
        return self.roots.get(audioset_id, "unknown")


def parse_ontology(entries: list[dict], source: str = "<memory>") -> CategoryNames:
    """Names and root names from AudioSet ontology entries.

    A class's root is the top of its first parent chain (the seven roots are the classes that are
    nobody's child). Raises :class:`InputError` naming ``source`` for malformed entries.
    """
    names: dict[str, str] = {}
    parents: dict[str, str] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not isinstance(entry.get("name"), str):
            raise InputError(f"{source}: entry {index} needs string fields 'id' and 'name'")
        names[entry["id"]] = entry["name"]
        for child in entry.get("child_ids") or []:
            parents.setdefault(child, entry["id"])
    roots: dict[str, str] = {}
    for class_id in names:
        current, seen = class_id, set()
        while current in parents and current not in seen:
            seen.add(current)
            current = parents[current]
        roots[class_id] = names.get(current, current)
    return CategoryNames(names=names, roots=roots, source=source)


def find_ontology_file() -> Path | None:
    """The first ontology file that exists among the configured places."""
    candidates = [os.environ.get("AGLW_ONTOLOGY"), Settings.load().ontology_path, str(cache_dir() / "ontology.json")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def load_category_names(path: Path | None = None) -> CategoryNames:
    """Load names and roots; an empty mapping (ids shown as unknown) when no ontology is present."""
    path = path or find_ontology_file()
    if path is None:
        return CategoryNames(names={}, roots={}, source=None)
    try:
        entries = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read the AudioSet ontology ({exc}); fix AGLW_ONTOLOGY or ontology_path") from exc
    if not isinstance(entries, list):
        raise InputError(f"{path}: the AudioSet ontology must be a JSON list of classes")
    return parse_ontology(entries, str(path))
