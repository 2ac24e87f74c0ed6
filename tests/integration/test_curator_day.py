"""A curator's real day, end to end, on the real AGL1K CSV, ALM output and recordings in ../shared.

import → recordings arrive afterwards → media link → tag → judge against a fake Anthropic API that
misbehaves (wrong base URL, 401, duplicate keys, an HTML 200, 529 on collect) → fit → label edits
from two processes with one conflict → refit → select → export selection → agreement.

Asserted at every step: exit codes, that stdout of every --json command is one JSON value, the
rows stored, that no request was answered twice and that every answer received is stored.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import deque
from pathlib import Path

import pytest
from sqlmodel import select

from storage import open_store
from storage.models import CategoryLabel, Clip, JudgeCall, Judgment, LabelHistory, Prediction, Tag
from tests.support.fake_anthropic import FakeAnthropicAPI

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KEY = "sk-ant-curator-day-0123456789abcdef"
ESSAOUIRA = "aporee_26839_30948"  # has a Gemini answer in the shared partial result file
BERLIN = "aporee_5201_6631"


@pytest.fixture
def day(shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(shared_dir / "fixtures" / "efficientat-mn04" / "mn04_random_state_dict.pt", models / "mn04_as.pt")
    env = {
        "AGLW_EFFICIENTAT_DIR": str(models),
        "AGLW_ONTOLOGY": str(shared_dir / "audioset" / "ontology.json"),
        "AGLW_AUDIOSET_CLASSES": str(shared_dir / "audioset" / "class_labels_indices.csv"),
        "ANTHROPIC_API_KEY": KEY,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    return {"shared": shared_dir, "tmp": tmp_path, "db": str(tmp_path / "agl1k.sqlite"), "env": env}


def aglw(day: dict, *argv: str, expect: int = 0) -> object:
    """Run `aglw` as a separate process, as a curator's shell does; parse stdout when --json."""
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "--db", day["db"], *argv],
        capture_output=True, text=True, timeout=600, env={**os.environ, **day["env"]},
    )
    assert result.returncode == expect, f"aglw {' '.join(argv)}: exit {result.returncode}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    if "--json" in argv and result.stdout.strip():
        return json.loads(result.stdout)  # exactly one JSON value, or this raises
    if expect:
        assert result.stderr.strip().splitlines()[-1].startswith("aglw: "), result.stderr
    return result


def test_a_curators_day_on_the_real_data(day, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    shared = day["shared"]
    media = tmp_path / "media"
    media.mkdir()

    # import: nothing at hand yet
    report = aglw(day, "--json", "import", "dataset", "--format", "agl1k",
                  str(shared / "data" / "agl1k" / "geoLocalization_schema.csv"), "--media-root", str(media))
    assert report["counts"]["clips_stored"] > 1000 and report["counts"]["audio_found"] == 0
    n_clips = report["counts"]["clips_stored"]
    report = aglw(day, "--json", "import", "predictions", "--model", "gemini-3-pro-preview",
                  str(shared / "data" / "agl1k" / "gemini-3-pro-preview_seed_42_ABCD.partial.jsonl"))
    assert report["stored"]
    assert aglw(day, "--json", "clips", "list", "--has-audio") == []

    # the recordings arrive afterwards, under the names the dataset gives them
    shutil.copy(shared / "media" / "agl1k_case2_essaouira.mp3", media / "20020207EssaouiraRempartsMuezzin.mp3")
    (media / "berlin").mkdir()
    shutil.copy(shared / "media" / "agl1k_case4_berlin_blackbird.mp3",
                media / "berlin" / "AmselanDietersFensterJuni2003Edit.mp3")
    linked = aglw(day, "--json", "media", "link")
    assert sorted(e["key"] for e in linked["linked"]) == sorted([BERLIN, ESSAOUIRA])
    assert len(linked["missing"]) == n_clips - 2 and not linked["ambiguous"]
    assert [c["key"] for c in aglw(day, "clips", "list", "--has-audio", "--json")] == sorted([BERLIN, ESSAOUIRA])

    # tag: the two recordings; the clips without audio are named, not failed
    tagged = aglw(day, "--json", "tag", "--model", "mn04_as", "--workers", "1")
    assert tagged["tagged"] == 2 and tagged["failed"] == [] and len(tagged["no_audio"]) == n_clips - 2
    shown = aglw(day, "--json", "clips", "show", ESSAOUIRA)
    assert shown["audio"]["state"] == "ok" and shown["tags"] and all(t["name"] for t in shown["tags"])
    assert shown["predictions"][0]["model"] == "gemini-3-pro-preview"

    # a second ALM answered both clips (written here), so both can be judged in a batch
    second = tmp_path / "second-alm.jsonl"
    second.write_text("".join(json.dumps({
        "question_id": key, "question": "Where?", "task_id": "audio_localization", "reasoning": reasoning,
        "model_output": "{}", "predicted_city": city, "predicted_country": country, "predicted_continent": "Europe",
        "predicted_latitude": lat, "predicted_longitude": lon, "seed": 1,
    }) + "\n" for key, reasoning, city, country, lat, lon in (
        (ESSAOUIRA, "A muezzin's call and sea wind: a coastal Moroccan town.", "Tangier", "Morocco", "35.76", "-5.83"),
        (BERLIN, "A blackbird sings in a quiet courtyard with distant traffic.", "Hamburg", "Germany", "53.55", "9.99"),
    )), encoding="utf-8")
    aglw(day, "--json", "import", "predictions", "--model", "second-alm", str(second))

    with FakeAnthropicAPI(expected_key=KEY) as api:
        # wrong base URL, then a key the API refuses: one line each, exit 1, nothing stored
        aglw(day, "judge", "--alm", "gemini-3-pro-preview", "--base-url", "http://127.0.0.1:9", expect=1)
        api.expected_key = "another-key"
        result = aglw(day, "judge", "--alm", "gemini-3-pro-preview", "--base-url", api.base_url, expect=1)
        assert KEY not in result.stderr  # type: ignore[union-attr]
        api.expected_key = KEY
        # a key given twice is sent once; one HTML 200 becomes a stored failed judgment
        api.script = deque(["ok", "html_body", "ok"])
        judged = aglw(day, "--json", "judge", "--alm", "gemini-3-pro-preview", "--concurrency", "1",
                      "--clips", f"{ESSAOUIRA},{ESSAOUIRA}", "--base-url", api.base_url, expect=1)
        assert sum(j["ok"] for j in judged["judges"]) == 2 and sum(j["failed"] for j in judged["judges"]) == 1
        assert len(api.message_requests()) == 3
        # the rerun resends only the failed judge
        aglw(day, "--json", "judge", "--alm", "gemini-3-pro-preview", "--clips", ESSAOUIRA,
             "--base-url", api.base_url)
        assert len(api.message_requests()) == 4
        # batch on the second ALM; 529 while collecting; a later collect stores everything
        submitted = aglw(day, "--json", "judge", "--alm", "second-alm", "--judges", "haiku", "--mode", "batch",
                         "--base-url", api.base_url)
        assert submitted["judges"][0]["status"] == "submitted" and submitted["judges"][0]["cost_usd"] is None
        api.route_faults["GET /v1/messages/batches"] = deque(["529"] * 10)
        aglw(day, "judge", "--collect", "--base-url", api.base_url, expect=1)
        api.route_faults.clear()
        collected = aglw(day, "--json", "judge", "--collect", "--base-url", api.base_url)
        assert collected["judges"][0]["ok"] == 2 and collected["cost_usd"] > 0
        assert api.count("POST", "/v1/messages/batches") == 1
        answered = [r for r in api.message_requests()]
        bodies = [json.dumps(r.body, sort_keys=True) for r in answered]

    store = open_store(day["db"])
    try:
        with store.session() as s:
            calls = s.exec(select(JudgeCall)).all()
            keys = {c.id: c.key for c in s.exec(select(Clip).where(Clip.key.in_([ESSAOUIRA, BERLIN])))}  # type: ignore[attr-defined]
            judgments = s.exec(select(Judgment)).all()
            linked_predictions = s.exec(select(Prediction).where(Prediction.clip_id.is_(None))).all()  # type: ignore[union-attr]
            n_tags = len(s.exec(select(Tag)).all())
        # every answer received is stored: 4 sync replies (one HTML) and 2 batch results
        assert len(calls) == 6 and sum(c.status == "ok" for c in calls) == 5
        ok_bodies = [b for b, c in zip(bodies, calls) if c.status == "ok"]
        assert len(set(ok_bodies)) == len(ok_bodies)  # no answered request was sent again
        assert {keys[j.clip_id] for j in judgments if j.status == "ok"} == {ESSAOUIRA, BERLIN}
        assert not linked_predictions and n_tags > 0
    finally:
        store.dispose()
    named = aglw(day, "--json", "judgments", "show", "--clip", ESSAOUIRA)
    assert named and all(r["category"] for r in named)

    # fit, then two experts' labels; two processes edit one label, the second is refused
    fit = aglw(day, "--json", "fit", "--alm", "gemini-3-pro-preview")
    assert fit["categories"] and all(c["name"] for c in fit["categories"])
    category = named[0]["category_id"]
    label = ["label", "set", "--clip", ESSAOUIRA, "--category", category, "--expect-version", "0"]
    aglw(day, "--annotator", "ana", "--json", *label, "--contribution", "3")
    refused = aglw(day, "--annotator", "ana", *label, "--contribution", "1", expect=1)
    assert "contribution=3" in refused.stderr and "contribution=1" in refused.stderr  # type: ignore[union-attr]
    for annotator, value in (("ben", "2"), ("chloe", "3")):
        aglw(day, "--annotator", annotator, "label", "set", "--clip", ESSAOUIRA, "--category", category,
             "--contribution", value)
        aglw(day, "--annotator", annotator, "label", "clip", "--clip", ESSAOUIRA, "--rating", "4",
             "--decision", "accept")
    history = aglw(day, "--json", "label", "history", "--clip", ESSAOUIRA)
    assert [(h["annotator"], h["new"]) for h in history if h["field"] == "contribution"] == [
        ("ana", 3), ("ben", 2), ("chloe", 3)]
    assert all(h["clip"] == ESSAOUIRA for h in history)
    store = open_store(day["db"])
    try:
        with store.session() as s:
            stored = {(l.category_id, l.contribution) for l in s.exec(select(CategoryLabel))}
            n_history = len(s.exec(select(LabelHistory)).all())
        assert (category, 3) in stored and n_history == len(history)
    finally:
        store.dispose()

    # refit, select, export (refused over an existing file without --force), agreement
    refit = aglw(day, "--json", "fit", "--alm", "gemini-3-pro-preview")
    assert refit["run_id"] > fit["run_id"]
    selected = aglw(day, "--json", "select", "--size", "1")
    assert selected
    out = tmp_path / "selection.csv"
    aglw(day, "--json", "export", "selection", str(out))
    assert out.is_file()
    before = out.read_bytes()
    aglw(day, "export", "selection", str(out), expect=1)
    assert out.read_bytes() == before
    bundle = tmp_path / "agreement"
    aglw(day, "--json", "agreement", "--out", str(bundle))
    assert any(bundle.iterdir())
    aglw(day, "agreement", "--out", str(bundle), expect=1)  # not mixed into an old bundle
