"""The AudioSet ontology, EfficientAT's 527-class index, and category roll-ups.

Roll-up rule (documented contract): the probability of an ontology node is the **maximum**
of the clip probabilities of the indexed classes at or below it. A class reachable from
several roots (the ontology is a DAG) counts under each of them.

AGL1K's eight category columns map onto the seven AudioSet roots one to one, except that
AGL1K splits the root "Channel, environment and background" into two columns, ``channel``
and ``environment_and_background``; both receive that root's roll-up.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from workbench.errors import InputError

N_CLASSES = 527

ROOT_NAMES: tuple[str, ...] = (
    "Human sounds",
    "Animal",
    "Music",
    "Natural sounds",
    "Channel, environment and background",
    "Sounds of things",
    "Source-ambiguous sounds",
)

AGL1K_CATEGORY_ROOTS: dict[str, str] = {
    "human_sounds": "Human sounds",
    "animal": "Animal",
    "music": "Music",
    "natural_sounds": "Natural sounds",
    "channel": "Channel, environment and background",
    "environment_and_background": "Channel, environment and background",
    "sounds_of_things": "Sounds of things",
    "source_ambiguous_sounds": "Source-ambiguous sounds",
}


@dataclass(frozen=True)
class AudioSetClass:
    """One output of the tagger: its index, AudioSet id (``/m/09x0r``) and display name."""

    index: int
    id: str
    name: str


@dataclass(frozen=True)
class OntologyNode:
    id: str
    name: str
    child_ids: tuple[str, ...]
    restrictions: tuple[str, ...] = ()


@dataclass
class Ontology:
    """The ontology graph plus the class index, with roll-up matrices precomputed.

    Use :func:`load_ontology` to build one from files.
    """

    nodes: dict[str, OntologyNode]
    classes: list[AudioSetClass]
    root_ids: list[str]
    _root_members: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        index_of = {c.id: c.index for c in self.classes}
        members = np.zeros((len(self.root_ids), len(self.classes)), dtype=bool)
        for row, root in enumerate(self.root_ids):
            for node_id in self.descendants(root):
                if node_id in index_of:
                    members[row, index_of[node_id]] = True
        self._root_members = members

    @property
    def root_names(self) -> list[str]:
        return [self.nodes[r].name for r in self.root_ids]

    def descendants(self, node_id: str) -> set[str]:
        """``node_id`` and every node below it."""
        seen: set[str] = set()
        stack = [node_id]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            stack.extend(self.nodes[current].child_ids)
        return seen

    def roots_of_class(self, class_index: int) -> list[str]:
        """Names of the roots a class counts under (one or more)."""
        return [self.nodes[r].name for row, r in enumerate(self.root_ids) if self._root_members[row, class_index]]

    def root_rollup(self, probabilities: np.ndarray) -> dict[str, float]:
        """Root name → max probability of its indexed descendants (0.0 when it has none).

        Parameters
        ----------
        probabilities
            Clip probabilities, shaped (527,) in class-index order.
        """
        probabilities = self._check(probabilities)
        masked = np.where(self._root_members, probabilities[None, :], 0.0)
        return {name: float(value) for name, value in zip(self.root_names, masked.max(axis=1))}

    def agl1k_rollup(self, probabilities: np.ndarray) -> dict[str, float | None]:
        """AGL1K category column → roll-up of its AudioSet root (None if the ontology lacks that root)."""
        by_root = self.root_rollup(probabilities)
        return {column: by_root.get(root) for column, root in AGL1K_CATEGORY_ROOTS.items()}

    def _check(self, probabilities: np.ndarray) -> np.ndarray:
        array = np.asarray(probabilities, dtype=np.float64)
        if array.shape != (len(self.classes),):
            raise ValueError(f"expected {len(self.classes)} class probabilities, got shape {array.shape}")
        return array


def _load_nodes(path: Path) -> dict[str, OntologyNode]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"{path}: ontology file not found; set AGLW_ONTOLOGY or delete it to re-download") from exc
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg}); "
            "the AudioSet ontology file is damaged, delete it to re-download or point AGLW_ONTOLOGY to a good copy"
        ) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text; it is not the AudioSet ontology.json") from exc
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{path}: expected a JSON array of ontology entries; this is not the AudioSet ontology.json")
    nodes: dict[str, OntologyNode] = {}
    for position, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise InputError(f"{path}: entry {position} is not an object; the ontology file is damaged")
        missing = [k for k in ("id", "name", "child_ids") if k not in entry]
        if missing:
            raise InputError(f"{path}: entry {position} lacks field(s) {', '.join(missing)}; the ontology file is damaged")
        if not isinstance(entry["child_ids"], list):
            raise InputError(f"{path}: entry {position} ({entry['id']}): field child_ids is not a list")
        nodes[str(entry["id"])] = OntologyNode(
            id=str(entry["id"]),
            name=str(entry["name"]),
            child_ids=tuple(str(c) for c in entry["child_ids"]),
            restrictions=tuple(str(r) for r in entry.get("restrictions") or ()),
        )
    for node in nodes.values():
        unknown = [c for c in node.child_ids if c not in nodes]
        if unknown:
            raise InputError(f"{path}: entry {node.id} ({node.name}) names unknown child id {unknown[0]}; the file is damaged")
    return nodes


def _load_classes(path: Path, nodes: dict[str, OntologyNode]) -> list[AudioSetClass]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise InputError(
            f"{path}: AudioSet class index not found; set AGLW_AUDIOSET_CLASSES or put "
            "class_labels_indices.csv next to the ontology"
        ) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text; it is not class_labels_indices.csv") from exc
    reader = csv.DictReader(text.splitlines())
    if reader.fieldnames is None or not {"index", "mid", "display_name"} <= set(reader.fieldnames):
        raise InputError(f"{path}: line 1: expected the header index,mid,display_name; this is not class_labels_indices.csv")
    classes: list[AudioSetClass] = []
    for row in reader:
        line = reader.line_num
        try:
            index = int(row["index"])
        except (TypeError, ValueError) as exc:
            raise InputError(f"{path}: line {line}: field index is not an integer ({row['index']!r})") from exc
        if index != len(classes):
            raise InputError(f"{path}: line {line}: index {index} out of order (expected {len(classes)})")
        mid = (row["mid"] or "").strip()
        if mid not in nodes:
            raise InputError(f"{path}: line {line}: class id {mid!r} is not in the ontology; use matching files")
        classes.append(AudioSetClass(index=index, id=mid, name=(row["display_name"] or "").strip()))
    if len(classes) != N_CLASSES:
        raise InputError(f"{path}: holds {len(classes)} classes, expected {N_CLASSES}; the file is truncated or wrong")
    return classes


def load_ontology(ontology_path: str | Path, classes_path: str | Path) -> Ontology:
    """Read ``ontology.json`` and ``class_labels_indices.csv`` and check they fit together.

    Raises
    ------
    InputError
        A file is missing, malformed, or the two disagree; the message names the file and line.
    """
    ontology_path, classes_path = Path(ontology_path), Path(classes_path)
    nodes = _load_nodes(ontology_path)
    children = {c for node in nodes.values() for c in node.child_ids}
    roots = [node_id for node_id in nodes if node_id not in children]
    if not roots:
        raise InputError(f"{ontology_path}: the ontology has no root category (every node is someone's child)")
    classes = _load_classes(classes_path, nodes)
    return Ontology(nodes=nodes, classes=classes, root_ids=roots)
