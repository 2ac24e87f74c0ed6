"""Audio that arrives after the import: `aglw media link`, the one rule for finding a clip's
recording, `clips list/show` and `judgments show` reading back what is stored."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from sqlmodel import select

from storage import open_store
from storage.models import Clip, MediaRoot, Prediction
from tests.cli_helpers import run_json
from tests.storage.test_import_dataset import clip_row, write_csv
from tests.storage.test_import_predictions import HAND_RECORDS, write_jsonl
from cli.main import main
from workbench.importing import import_dataset, import_predictions
from workbench.media import clip_audio, link_media


def _wav(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, np.zeros((800, 1)), 8000)
    return path


@pytest.fixture
def project(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Four clips imported with an empty media root: the recordings arrive afterwards."""
    media = tmp_path / "media"
    media.mkdir()
    rows = [clip_row(i, title=f"Clip {i}", city=["Preston", "Essaouira", "Berlin", "Lille"][i]) for i in range(4)]
    db = tmp_path / "p.sqlite"
    store = open_store(db)
    import_dataset(store, write_csv(tmp_path / "d.csv", rows), name="d", media_root=media)
    yield store, db, media, tmp_path
    store.dispose()


def _audio_paths(store) -> dict[str, str | None]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return {c.key: c.audio_path for c in s.exec(select(Clip))}


def test_recordings_added_after_the_import_are_linked_by_each_rule(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db, media, _ = project
    _wav(media / "clip0.mp3".replace(".mp3", ".wav")).rename(media / "clip0.mp3")  # <root>/<mp3name>
    _wav(media / "aporee_1_1001" / "clip1.mp3")  # <root>/<key>/<mp3name> (fetch-audio's layout)
    _wav(media / "2019" / "deep" / "clip2.mp3")  # the file name anywhere below the root
    _wav(media / "misc" / "aporee_3_1003.wav")  # the key as the stem
    before = run_json(capsys, "--db", str(db), "clips", "list", "--no-audio", "--json")
    assert len(before) == 4
    dry = run_json(capsys, "--db", str(db), "--json", "media", "link", "--dry-run")
    assert dry["dry_run"] and len(dry["linked"]) == 4
    assert set(_audio_paths(store).values()) == {None}  # a dry run changes nothing
    report = run_json(capsys, "media", "link", "--db", str(db), "--json")  # global options after
    assert {e["key"] for e in report["linked"]} == {f"aporee_{i}_{1000 + i}" for i in range(4)}
    assert _audio_paths(store) == {
        "aporee_0_1000": "clip0.mp3", "aporee_1_1001": "aporee_1_1001/clip1.mp3",
        "aporee_2_1002": "2019/deep/clip2.mp3", "aporee_3_1003": "misc/aporee_3_1003.wav",
    }
    listed = run_json(capsys, "--db", str(db), "--json", "clips", "list", "--has-audio")
    assert [r["key"] for r in listed] == [f"aporee_{i}_{1000 + i}" for i in range(4)]
    assert all(Path(r["audio_path"]).is_file() for r in listed)
    again = run_json(capsys, "--db", str(db), "--json", "media", "link")
    assert again["already"] == 4 and not again["linked"]


def test_two_candidate_files_are_ambiguous_and_nothing_is_guessed(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db, media, _ = project
    _wav(media / "a" / "clip0.mp3")
    _wav(media / "b" / "clip0.mp3")
    report = run_json(capsys, "--db", str(db), "--json", "media", "link")
    [entry] = report["ambiguous"]
    assert entry["key"] == "aporee_0_1000" and len(entry["candidates"]) == 2
    assert _audio_paths(store)["aporee_0_1000"] is None
    assert main(["--db", str(db), "media", "link"]) == 0
    out = capsys.readouterr().out
    assert "ambiguous: aporee_0_1000" in out and "ambiguous 1" in out


def test_a_moved_file_shows_missing_with_its_last_known_path_and_relinks_from_a_new_root(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db, media, tmp_path = project
    _wav(media / "clip0.mp3")
    link_media(store)
    new_home = tmp_path / "external-disk"
    new_home.mkdir()
    shutil.move(media / "clip0.mp3", new_home / "clip0.mp3")
    shown = run_json(capsys, "--db", str(db), "--json", "clips", "show", "aporee_0_1000")
    assert shown["audio"]["state"] == "missing" and shown["audio"]["path"] == str((media / "clip0.mp3").resolve())
    assert "last known path" in shown["audio"]["message"]
    listed = run_json(capsys, "--db", str(db), "--json", "clips", "list", "--search", "aporee_0")
    assert listed[0]["audio"] == "missing" and listed[0]["audio_path"] is None
    assert listed[0]["last_known_audio_path"] == str((media / "clip0.mp3").resolve())
    report = run_json(capsys, "--db", str(db), "--json", "media", "link", "--root", str(new_home))
    assert [e["key"] for e in report["linked"]] == ["aporee_0_1000"]
    assert report["added_roots"] == [{"dataset": "d", "path": str(new_home.resolve())}]
    with store.session() as s:
        roots = {r.path for r in s.exec(select(MediaRoot))}
    assert str(new_home.resolve()) in roots
    shown = run_json(capsys, "--db", str(db), "--json", "clips", "show", "aporee_0_1000")
    assert shown["audio"]["state"] == "ok"


def test_link_errors_are_one_line(project, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    _, db, _, _ = project
    assert main(["--db", str(db), "media", "link", "--root", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert "not a folder" in err and len(err.strip().splitlines()) == 1
    assert main(["--db", str(tmp_path / "typo.sqlite"), "media", "link"]) == 1
    assert "no project at" in capsys.readouterr().err
    assert not (tmp_path / "typo.sqlite").exists()
    assert main(["--db", str(db), "clips", "list", "--has-prediction", "nobody"]) == 1
    assert "no ALM named 'nobody'" in capsys.readouterr().err


def test_the_gui_tagging_and_cli_use_one_rule(project) -> None:  # type: ignore[no-untyped-def]
    """mp3name alone is not audio: the review view, tagging and `clips list` agree until linked."""
    from workbench.review.service import ReviewService

    store, _, media, _ = project
    _wav(media / "clip0.mp3")
    review = ReviewService(store, {}, {})
    clip_id = review.clip_id_for_key("aporee_0_1000")
    assert review.clip_detail(clip_id, None).audio_path is None
    with store.session() as s:
        clip = s.exec(select(Clip).where(Clip.key == "aporee_0_1000")).one()
    assert not clip_audio(clip.key, clip.audio_path, [media]).ok
    link_media(store)
    assert review.clip_detail(clip_id, None).audio_path == (media / "clip0.mp3").resolve()


def test_a_title_with_markup_is_printed_as_written(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db, _, _ = project
    with store.write() as s:
        clip = s.exec(select(Clip).where(Clip.key == "aporee_0_1000")).one()
        clip.title = "[bold red]Gare[/] [/x]"
        s.add(clip)
    assert main(["--db", str(db), "clips", "show", "aporee_0_1000"]) == 0
    assert "title: [bold red]Gare[/] [/x]" in capsys.readouterr().out
    assert main(["--db", str(db), "clips", "list", "--search", "gare"]) == 0
    assert "[bold red]Gare[/]" in capsys.readouterr().out


def test_predictions_imported_before_the_dataset_are_linked_when_it_arrives(tmp_path: Path) -> None:
    store = open_store(tmp_path / "p.sqlite")
    import_predictions(store, "m", write_jsonl(tmp_path / "m.jsonl", HAND_RECORDS))
    with store.session() as s:
        assert {p.clip_id for p in s.exec(select(Prediction))} == {None}
    rows = [clip_row(i, key=f"k{i + 1}") for i in range(5)]
    report = import_dataset(store, write_csv(tmp_path / "d.csv", rows), name="d")
    assert report.counts["predictions_linked"] == 5
    with store.session() as s:
        keys = {c.id: c.key for c in s.exec(select(Clip))}
        assert {keys[p.clip_id]: p.question_id for p in s.exec(select(Prediction))} == {
            f"k{i}": f"k{i}" for i in range(1, 6)
        }
    store.dispose()


def test_clips_show_and_judgments_show_name_everything(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from workbench.demo import create_demo_project

    db = str(create_demo_project(tmp_path / "demo").db_path)
    shown = run_json(capsys, "--db", db, "--json", "clips", "show", "DEMO-0002")
    assert shown["key"] == "DEMO-0002" and shown["audio"]["state"] in {"ok", "unlinked", "missing"}
    assert shown["tags"] and all(t["name"] for t in shown["tags"])
    assert shown["predictions"] and shown["judgments"]
    rows = run_json(capsys, "--db", db, "judgments", "show", "--clip", "DEMO-0002", "--json")
    assert rows and all(r["clip"] == "DEMO-0002" and r["category"] for r in rows)
    assert {r["judge"] for r in rows} == {r["judge"] for r in shown["judgments"]}
    one = rows[0]["judge"]
    only = run_json(capsys, "--db", db, "--json", "judgments", "show", "--judge", one)
    assert only and {r["judge"] for r in only} == {one}
    assert main(["--db", db, "judgments", "show", "--judge", "nobody"]) == 1
    assert "no judge named 'nobody'" in capsys.readouterr().err
    assert main(["--db", db, "judgments", "show", "--clip", "DEMO-0002"]) == 0
    out = capsys.readouterr().out
    assert "DEMO-0002" in out and json.dumps(rows[0]["judge"]).strip('"') in out
