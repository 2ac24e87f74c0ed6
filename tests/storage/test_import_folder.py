"""A folder of recordings as a dataset: keys from paths, metadata from NAME.json or metadata.csv
through the same mapping, recordings linked in place, one-line errors, all or nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from sqlalchemy import func, select

from cli.main import main
from storage.models import Clip, Dataset, MediaRoot
from workbench.audio import synth
from workbench.errors import InputError
from workbench.importing import import_dataset
from workbench.media import clip_audio, dataset_roots


def write_wav(path: Path, seconds: float = 0.5, rate: int = 16_000, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, synth.white_noise(int(seconds * rate), np.random.default_rng(seed)).astype(np.float32), rate)
    return path


def clips(store) -> dict[str, Clip]:
    with store.session() as s:
        return {c.key: c for c in s.execute(select(Clip)).scalars().all()}


def count(store, table) -> int:
    with store.session() as s:
        return s.execute(select(func.count()).select_from(table)).scalar_one()


def test_json_sidecars_without_a_mapping(store, tmp_path):
    root = tmp_path / "pool"
    write_wav(root / "lisbon" / "tram.wav", 0.5)
    write_wav(root / "oslo.wav", 0.25, seed=1)
    (root / "lisbon" / "tram.json").write_text(json.dumps({"latitude": 38.71, "longitude": -9.14, "title": "Tram 28",
                                                           "mic": "XY"}), encoding="utf-8")
    (root / "oslo.json").write_text(json.dumps({"latitude": 59.91, "longitude": 10.75, "country": "Norway"}),
                                    encoding="utf-8")
    (root / "notes.txt").write_text("not a recording", encoding="utf-8")
    report = import_dataset(store, root, format="folder")
    assert report.stored and report.counts["clips_stored"] == 2 and report.counts["audio_found"] == 2
    got = clips(store)
    tram, oslo = got["lisbon/tram"], got["oslo"]
    assert (tram.title, tram.mp3name, tram.audio_path, tram.extra) == ("Tram 28", "lisbon/tram.wav", "lisbon/tram.wav", {"mic": "XY"})
    assert (tram.country, tram.continent, tram.derived) == ("Portugal", "Europe", ["country", "continent"])
    assert (oslo.country, oslo.derived) == ("Norway", ["continent"])
    assert tram.mp3seconds == pytest.approx(0.5) and oslo.mp3seconds == pytest.approx(0.25)
    with store.session() as s:
        dataset = s.execute(select(Dataset)).scalar_one()
        assert s.execute(select(MediaRoot.path)).scalars().all() == [str(root.resolve())]
    roots = dataset_roots(store)[dataset.id]
    assert dataset.name == "pool" and dataset.format == "folder"
    # linked in place, by the one media rule
    assert clip_audio(tram.key, tram.audio_path, roots).path == (root / "lisbon" / "tram.wav").resolve()


def test_metadata_csv_with_a_mapping(store, tmp_path):
    root = tmp_path / "pool"
    write_wav(root / "a.wav")
    write_wav(root / "sub" / "b.wav", seed=2)
    (root / "metadata.csv").write_text(
        "file_name,y,x,place,code\nsub/b.wav,35.68,139.69,Tokyo,JP\na.wav,-1.29,36.82,Nairobi,KE\n", encoding="utf-8")
    mapping = tmp_path / "m.toml"
    mapping.write_text('[columns]\nlatitude = "y"\nlongitude = "x"\ncity = "place"\ncountry = "code"\n'
                       '[transforms]\ncountry = "iso2"\n', encoding="utf-8")
    import_dataset(store, root, format="folder", mapping=mapping)
    got = clips(store)
    assert (got["a"].city, got["a"].country, got["a"].continent) == ("Nairobi", "Kenya", "Africa")
    assert (got["sub/b"].country, got["sub/b"].audio_path, got["sub/b"].extra) == ("Japan", "sub/b.wav", {"file_name": "sub/b.wav"})


def test_folder_errors_are_one_line_and_store_nothing(store, tmp_path):
    root = tmp_path / "pool"
    write_wav(root / "a.wav")
    write_wav(root / "b.wav")
    (root / "a.json").write_text(json.dumps({"latitude": 1.0, "longitude": 2.0}), encoding="utf-8")
    with pytest.raises(InputError, match=r"b\.wav: no metadata for this recording \(no b\.json beside it"):
        import_dataset(store, root, format="folder")
    (root / "b.json").write_text(json.dumps({"latitude": "x", "longitude": 2.0}), encoding="utf-8")
    with pytest.raises(InputError, match=r"b\.json, field latitude \(column 'latitude'\): 'x': not a number"):
        import_dataset(store, root, format="folder")
    (root / "b.json").write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match=r"b\.json, line 1: not valid JSON"):
        import_dataset(store, root, format="folder")
    (root / "b.json").write_text(json.dumps({"latitude": 3.0, "longitude": 4.0}), encoding="utf-8")
    write_wav(root / "b.flac")
    with pytest.raises(InputError, match=r"b\.flac and b\.wav give the same clip key 'b'"):
        import_dataset(store, root, format="folder")
    (root / "b.flac").unlink()
    (root / "metadata.csv").write_text("file_name,latitude,longitude\na.wav,1,2\nc.wav,1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"metadata\.csv, line 3, field audio \(column 'file_name'\): 'c\.wav' names no recording"):
        import_dataset(store, root, format="folder")
    (root / "metadata.csv").write_text("file_name,latitude,longitude\na.wav,1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"b\.wav: no row of .*metadata\.csv describes this recording"):
        import_dataset(store, root, format="folder")
    with pytest.raises(InputError, match="not a folder"):
        import_dataset(store, root / "a.wav", format="folder")
    assert count(store, Clip) == 0 and count(store, Dataset) == 0


def test_a_link_out_of_the_folder_is_not_a_clip(store, tmp_path):
    root = tmp_path / "pool"
    write_wav(root / "a.wav")
    (root / "a.json").write_text(json.dumps({"latitude": 1.0, "longitude": 2.0}), encoding="utf-8")
    outside = write_wav(tmp_path / "elsewhere" / "secret.wav")
    (root / "secret.wav").symlink_to(outside)
    import_dataset(store, root, format="folder")
    assert set(clips(store)) == {"a"}


def test_cli_folder_dry_run(tmp_path, capsys):
    root = tmp_path / "pool"
    write_wav(root / "a.wav")
    (root / "a.json").write_text(json.dumps({"latitude": 1.0, "longitude": 2.0}), encoding="utf-8")
    db = tmp_path / "p.sqlite"
    assert main(["--db", str(db), "--json", "import", "dataset", "--format", "folder", str(root), "--dry-run"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["dry_run"] and payload["counts"]["rows"] == 1 and not db.exists()
    assert main(["--db", str(db), "import", "dataset", "--format", "folder", str(root), "--media-root", str(tmp_path)]) == 1
    assert "drop --media-root" in capsys.readouterr().err
