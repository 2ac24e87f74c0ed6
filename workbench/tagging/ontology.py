"""The AudioSet ontology, EfficientAT's 527-class index, and category roll-ups.

Roll-up rule (documented contract): the probability of an ontology node is the **maximum**
of the clip probabilities of the indexed classes at or below it. A class reachable from
several roots (the ontology is a DAG) counts under each of them.

AGL1K's eight category columns map onto the seven AudioSet roots one to one, except that
AGL1K splits the root "Channel, environment and background" into two columns, ``channel``
and ``environment_and_background``; both receive that root's roll-up.

This module is the project's one reader of ``ontology.json``: tagging, the judge prompts
(names and root category of a tag), the agreement breakdown by root and the curation
roll-up all use :class:`Ontology`. Where one root per class is needed (a prompt line, a
breakdown column), a class takes its *primary root*: the first root, in file order, it
lies under.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.config import Settings, cache_dir
from workbench.errors import InputError

if TYPE_CHECKING:
    import numpy as np  # roll-ups only: reading names (clips show, judgments show) stays free of numpy

N_CLASSES = 527
UNKNOWN_ROOT = "unknown"

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
    """One entry of ``ontology.json``: id, display name, children and restrictions."""

    id: str
    name: str
    child_ids: tuple[str, ...]
    restrictions: tuple[str, ...] = ()


@dataclass
class Ontology:
    """The ontology graph plus the class index, with roll-up matrices precomputed.

    Use :func:`load_ontology` to build one from files, :meth:`from_entries` from parsed
    JSON. Without a class index (``classes`` empty) names and roots work, roll-ups do not.
    """

    nodes: dict[str, OntologyNode]
    classes: list[AudioSetClass]
    root_ids: list[str]
    source: str | None = None
    _root_classes: list[set[int]] = field(init=False, repr=False)
    _primary_root: dict[str, str] = field(init=False, repr=False)
    _members: np.ndarray | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        index_of = {c.id: c.index for c in self.classes}
        root_classes: list[set[int]] = []
        primary: dict[str, str] = {}
        for root in self.root_ids:
            indices: set[int] = set()
            for node_id in self.descendants(root):
                primary.setdefault(node_id, self.nodes[root].name)
                if node_id in index_of:
                    indices.add(index_of[node_id])
            root_classes.append(indices)
        self._root_classes = root_classes
        self._primary_root = primary

    @property
    def _root_members(self) -> np.ndarray:
        """(roots, classes) bool: which classes count under which root (built on the first roll-up)."""
        if self._members is None:
            import numpy as np

            members = np.zeros((len(self.root_ids), len(self.classes)), dtype=bool)
            for row, indices in enumerate(self._root_classes):
                members[row, sorted(indices)] = True
            self._members = members
        return self._members

    @classmethod
    def from_nodes(
        cls, nodes: dict[str, OntologyNode], classes: Sequence[AudioSetClass] = (), *, source: str = "<memory>"
    ) -> Ontology:
        """An ontology whose roots are the nodes that are nobody's child, in file order.

        Raises
        ------
        InputError
            Every node is some node's child (there is no root).
        """
        children = {c for node in nodes.values() for c in node.child_ids}
        roots = [node_id for node_id in nodes if node_id not in children]
        if nodes and not roots:
            raise InputError(f"{source}: the ontology has no root category (every node is someone's child)")
        return cls(nodes=dict(nodes), classes=list(classes), root_ids=roots, source=source)

    @classmethod
    def from_entries(cls, entries: object, source: str = "<memory>") -> Ontology:
        """An ontology (names and roots, no class index) from parsed ``ontology.json`` entries.

        Raises
        ------
        InputError
            Malformed entries; the message names ``source`` and the entry.
        """
        return cls.from_nodes(parse_ontology_nodes(entries, source), source=source)

    @classmethod
    def empty(cls) -> Ontology:
        """No ontology at all: every id is shown as unknown (used when none is configured)."""
        return cls(nodes={}, classes=[], root_ids=[], source=None)

    @property
    def root_names(self) -> list[str]:
        """Display names of the roots, in file order."""
        return [self.nodes[r].name for r in self.root_ids]

    @property
    def names(self) -> dict[str, str]:
        """Every node id → its display name."""
        return {node_id: node.name for node_id, node in self.nodes.items()}

    @property
    def primary_roots(self) -> dict[str, str]:
        """Every node id → the name of its primary root (the first root above it in file order)."""
        return dict(self._primary_root)

    def name(self, node_id: str) -> str:
        """Display name of a node, or ``"<id> (name unknown)"`` when the ontology lacks it."""
        node = self.nodes.get(node_id)
        return node.name if node is not None else f"{node_id} (name unknown)"

    def primary_root(self, node_id: str) -> str:
        """Name of the node's primary root, or ``"unknown"`` when the ontology lacks it."""
        return self._primary_root.get(node_id, UNKNOWN_ROOT)

    def root_ids_by_node(self) -> dict[str, list[str]]:
        """Node id → ids of every root it lies under, in file order (a root maps to itself).

        The form :func:`workbench.curation.model.roll_up` takes: a class under several roots
        counts under each.
        """
        roots_of: dict[str, list[str]] = {}
        for root in self.root_ids:
            for node_id in self.descendants(root):
                roots_of.setdefault(node_id, []).append(root)
        return roots_of

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
        return [self.nodes[r].name for row, r in enumerate(self.root_ids) if class_index in self._root_classes[row]]

    def root_rollup(self, probabilities: np.ndarray) -> dict[str, float]:
        """Root name → max probability of its indexed descendants (0.0 when it has none).

        Parameters
        ----------
        probabilities
            Clip probabilities, shaped (527,) in class-index order.
        """
        import numpy as np

        probabilities = self._check(probabilities)
        masked = np.where(self._root_members, probabilities[None, :], 0.0)
        return {name: float(value) for name, value in zip(self.root_names, masked.max(axis=1))}

    def agl1k_rollup(self, probabilities: np.ndarray) -> dict[str, float | None]:
        """AGL1K category column → roll-up of its AudioSet root (None if the ontology lacks that root)."""
        by_root = self.root_rollup(probabilities)
        return {column: by_root.get(root) for column, root in AGL1K_CATEGORY_ROOTS.items()}

    def _check(self, probabilities: np.ndarray) -> np.ndarray:
        if not self.classes:
            raise ValueError("this ontology was loaded without the class index; roll-ups need class_labels_indices.csv")
        import numpy as np

        array = np.asarray(probabilities, dtype=np.float64)
        if array.shape != (len(self.classes),):
            raise ValueError(f"expected {len(self.classes)} class probabilities, got shape {array.shape}")
        return array


def parse_ontology_nodes(entries: object, source: str = "<memory>") -> dict[str, OntologyNode]:
    """Check parsed ``ontology.json`` entries and turn them into nodes, keyed by id in file order.

    Parameters
    ----------
    entries
        The decoded JSON: a list of ``{"id", "name", "child_ids", ["restrictions"]}`` objects.
    source
        What to call the entries in error messages (usually the file path).

    Raises
    ------
    InputError
        Not a list, an entry that is not an object or lacks a field, or a child id that no entry defines.
    """
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{source}: expected a JSON array of ontology entries; this is not the AudioSet ontology.json")
    nodes: dict[str, OntologyNode] = {}
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InputError(f"{source}: entry {position} is not an object; the ontology file is damaged")
        missing = [k for k in ("id", "name", "child_ids") if k not in entry]
        if missing:
            raise InputError(f"{source}: entry {position} lacks field(s) {', '.join(missing)}; the ontology file is damaged")
        if not isinstance(entry["child_ids"], list):
            raise InputError(f"{source}: entry {position} ({entry['id']}): field child_ids is not a list")
        nodes[str(entry["id"])] = OntologyNode(
            id=str(entry["id"]),
            name=str(entry["name"]),
            child_ids=tuple(str(c) for c in entry["child_ids"]),
            restrictions=tuple(str(r) for r in entry.get("restrictions") or ()),
        )
    for node in nodes.values():
        unknown = [c for c in node.child_ids if c not in nodes]
        if unknown:
            raise InputError(f"{source}: entry {node.id} ({node.name}) names unknown child id {unknown[0]}; the file is damaged")
    return nodes


def _load_nodes(path: Path) -> dict[str, OntologyNode]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"{path}: ontology file not found; set AGLW_ONTOLOGY or delete it to re-download") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{path}: is a folder; point AGLW_ONTOLOGY (or --ontology) to the ontology.json file") from exc
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg}); "
            "the AudioSet ontology file is damaged, delete it to re-download or point AGLW_ONTOLOGY to a good copy"
        ) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text; it is not the AudioSet ontology.json") from exc
    return parse_ontology_nodes(raw, str(path))


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


def load_ontology(ontology_path: str | Path, classes_path: str | Path | None = None) -> Ontology:
    """Read ``ontology.json`` and ``class_labels_indices.csv`` and check they fit together.

    Parameters
    ----------
    ontology_path
        The AudioSet ``ontology.json``.
    classes_path
        EfficientAT's 527-class index; None loads names and roots only (no roll-ups).

    Raises
    ------
    InputError
        A file is missing, malformed, or the two disagree; the message names the file and line.
    """
    ontology_path = Path(ontology_path)
    nodes = _load_nodes(ontology_path)
    classes = _load_classes(Path(classes_path), nodes) if classes_path is not None else []
    return Ontology.from_nodes(nodes, classes, source=str(ontology_path))


def ontology_cache_dir() -> Path:
    """Where the downloaded ``ontology.json`` and ``class_labels_indices.csv`` are kept."""
    return cache_dir() / "audioset"


def configured_ontology_paths() -> tuple[Path | None, Path | None]:
    """The ontology and class-index paths the user configured, None for each one not configured.

    The ontology is ``AGLW_ONTOLOGY``, else ``ontology_path`` in config.toml; the class index is
    ``AGLW_AUDIOSET_CLASSES``, else ``audioset_classes_path`` in config.toml, else a
    ``class_labels_indices.csv`` next to the configured ontology when one is there.
    """
    settings = Settings.load()
    configured = os.environ.get("AGLW_ONTOLOGY") or settings.ontology_path
    ontology_path = Path(configured).expanduser() if configured else None
    classes_env = os.environ.get("AGLW_AUDIOSET_CLASSES") or settings.extra.get("audioset_classes_path")
    classes_path = Path(str(classes_env)).expanduser() if classes_env else None
    if classes_path is None and ontology_path is not None:
        beside = ontology_path.with_name("class_labels_indices.csv")
        classes_path = beside if beside.is_file() else None
    return ontology_path, classes_path


def load_local_ontology() -> Ontology | None:
    """The configured or already downloaded ontology, without any download; None when there is none.

    For readers that only need names and roots (judge prompts, review, agreement): the class
    index is attached when one is found, else the ontology has names and roots only. Use
    :func:`workbench.tagging.assets.load_default_ontology` to download a missing copy.

    Raises
    ------
    InputError
        The configured file is missing or damaged.
    """
    ontology_path, classes_path = configured_ontology_paths()
    if ontology_path is None:
        cached = ontology_cache_dir() / "ontology.json"
        if not cached.is_file():
            return None
        ontology_path = cached
    if classes_path is None:
        cached_classes = ontology_cache_dir() / "class_labels_indices.csv"
        classes_path = cached_classes if cached_classes.is_file() else None
    return load_ontology(ontology_path, classes_path)
