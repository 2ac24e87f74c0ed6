"""AudioSet ontology loading, validation and the root / AGL1K roll-ups, on a small fixture."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from workbench.errors import InputError
from workbench.tagging.ontology import (
    AGL1K_CATEGORY_ROOTS,
    ROOT_NAMES,
    Ontology,
    load_local_ontology,
    load_ontology,
    ontology_cache_dir,
)


def write_small_ontology(directory: Path) -> tuple[Path, Path]:
    """A 7-root ontology with 527 indexed classes: class i sits under root i % 7, class 0 also
    under root 1 (two roots), class 14 under class 7 (two levels deep)."""
    directory.mkdir(parents=True, exist_ok=True)
    roots = [{"id": f"/r/{r}", "name": name, "child_ids": [], "restrictions": ["abstract"]} for r, name in enumerate(ROOT_NAMES)]
    classes = [{"id": f"/c/{i}", "name": f"class {i}", "child_ids": [], "restrictions": []} for i in range(527)]
    for i in range(527):
        if i == 14:
            classes[7]["child_ids"].append("/c/14")
        else:
            roots[i % 7]["child_ids"].append(f"/c/{i}")
    roots[1]["child_ids"].append("/c/0")
    ontology = directory / "ontology.json"
    ontology.write_text(json.dumps(roots + classes), encoding="utf-8")
    index = directory / "class_labels_indices.csv"
    with index.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["index", "mid", "display_name"])
        for i in range(527):
            writer.writerow([i, f"/c/{i}", f"class {i}"])
    return ontology, index


def test_loads_classes_and_roots(tmp_path: Path) -> None:
    ontology = load_ontology(*write_small_ontology(tmp_path))
    assert len(ontology.classes) == 527
    assert ontology.classes[526].id == "/c/526" and ontology.classes[3].name == "class 3"
    assert sorted(ontology.root_names) == sorted(ROOT_NAMES)
    assert ontology.roots_of_class(0) == ["Human sounds", "Animal"]
    assert ontology.roots_of_class(14) == ["Human sounds"]


def test_root_rollup_is_max_of_descendants_and_counts_multi_root_classes_under_each(tmp_path: Path) -> None:
    ontology = load_ontology(*write_small_ontology(tmp_path))
    probabilities = np.full(527, 0.01)
    probabilities[0] = 0.9  # under Human sounds and Animal
    probabilities[14] = 0.95  # grandchild of Human sounds
    probabilities[3] = 0.4  # under Natural sounds (index 3 % 7)
    probabilities[4] = 0.3  # Channel, environment and background
    rollup = ontology.root_rollup(probabilities)
    assert rollup["Human sounds"] == pytest.approx(0.95)
    assert rollup["Animal"] == pytest.approx(0.9)
    assert rollup["Natural sounds"] == pytest.approx(0.4)
    assert rollup["Music"] == pytest.approx(0.01)
    agl1k = ontology.agl1k_rollup(probabilities)
    assert set(agl1k) == set(AGL1K_CATEGORY_ROOTS)
    assert agl1k["channel"] == agl1k["environment_and_background"] == pytest.approx(0.3)
    assert agl1k["animal"] == pytest.approx(0.9)


def test_rollup_rejects_wrong_length(tmp_path: Path) -> None:
    ontology = load_ontology(*write_small_ontology(tmp_path))
    with pytest.raises(ValueError, match="527"):
        ontology.root_rollup(np.zeros(10))


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    ontology, index = write_small_ontology(tmp_path)
    ontology.write_text('[\n  {"id": "/r/0", "name": "Human sounds",\n  oops\n]', encoding="utf-8")
    with pytest.raises(InputError, match=r"ontology\.json: line 3.*not valid JSON"):
        load_ontology(ontology, index)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "x"}', "JSON array"),
        ('[{"id": "/r/0", "name": "x"}]', "lacks field"),
        ('[{"id": "/r/0", "name": "x", "child_ids": ["/nope"]}]', "unknown child id /nope"),
    ],
)
def test_structurally_wrong_ontology_is_refused(tmp_path: Path, content: str, message: str) -> None:
    ontology, index = write_small_ontology(tmp_path)
    ontology.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_ontology(ontology, index)


def test_class_index_problems_are_named(tmp_path: Path) -> None:
    ontology, index = write_small_ontology(tmp_path)
    lines = index.read_text(encoding="utf-8").splitlines()
    index.write_text("\n".join(lines[:100]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="99 classes, expected 527"):
        load_ontology(ontology, index)
    lines[5] = "4,/m/unknown,Ghost"
    index.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"line 6: class id '/m/unknown' is not in the ontology"):
        load_ontology(ontology, index)
    with pytest.raises(InputError, match="class index not found"):
        load_ontology(ontology, tmp_path / "missing.csv")


def test_primary_root_is_the_first_root_above_a_node(tmp_path: Path) -> None:
    ontology = load_ontology(*write_small_ontology(tmp_path))
    # class 0 sits under Human sounds (root 0) and Animal (root 1): the first in file order wins.
    assert ontology.primary_root("/c/0") == "Human sounds"
    assert ontology.primary_root("/c/1") == "Animal"
    assert ontology.primary_root("/c/14") == "Human sounds"  # grandchild through class 7
    assert ontology.primary_root("/c/13") == ROOT_NAMES[13 % 7]
    assert ontology.primary_root("/m/nope") == "unknown"
    roots = ontology.primary_roots
    assert len(roots) == 7 + 527 and roots["/r/2"] == "Music"
    assert ontology.name("/c/5") == "class 5" and ontology.name("/m/nope") == "/m/nope (name unknown)"
    assert ontology.names["/r/3"] == "Natural sounds"
    by_node = ontology.root_ids_by_node()
    assert by_node["/c/0"] == ["/r/0", "/r/1"] and by_node["/c/14"] == ["/r/0"] and by_node["/r/4"] == ["/r/4"]


def test_names_only_ontology_has_roots_but_refuses_rollups(tmp_path: Path) -> None:
    path, _ = write_small_ontology(tmp_path)
    names_only = load_ontology(path)
    assert names_only.classes == [] and names_only.primary_root("/c/9") == ROOT_NAMES[2]
    with pytest.raises(ValueError, match="without the class index"):
        names_only.root_rollup(np.zeros(527))
    in_memory = Ontology.from_entries(json.loads(path.read_text(encoding="utf-8")), "mem")
    assert in_memory.primary_roots == names_only.primary_roots and in_memory.source == "mem"
    with pytest.raises(InputError, match="mem: entry 0 lacks field"):
        Ontology.from_entries([{"id": "/x"}], "mem")
    with pytest.raises(InputError, match="no root category"):
        Ontology.from_entries([{"id": "/a", "name": "a", "child_ids": ["/b"]}, {"id": "/b", "name": "b", "child_ids": ["/a"]}])
    assert Ontology.empty().name("/m/x") == "/m/x (name unknown)" and Ontology.empty().primary_root("/m/x") == "unknown"


def test_local_ontology_comes_from_the_environment_or_the_cache_never_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGLW_ONTOLOGY", raising=False)
    monkeypatch.delenv("AGLW_AUDIOSET_CLASSES", raising=False)
    assert load_local_ontology() is None
    cached, _ = write_small_ontology(ontology_cache_dir())
    from_cache = load_local_ontology()
    assert from_cache is not None and len(from_cache.classes) == 527 and from_cache.source == str(cached)
    configured, index = write_small_ontology(tmp_path / "configured")
    index.unlink()
    monkeypatch.setenv("AGLW_ONTOLOGY", str(configured))
    from_env = load_local_ontology()
    assert from_env is not None and from_env.source == str(configured)
    # The configured ontology has no class index beside it: the cached one is attached.
    assert len(from_env.classes) == 527
    monkeypatch.setenv("AGLW_ONTOLOGY", str(tmp_path / "missing.json"))
    with pytest.raises(InputError, match="ontology file not found"):
        load_local_ontology()
