"""Reading ALM replies, prompt templates, the ALM configuration and the cost formulas (no store, no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.alm.config import Price, load_alm_config
from workbench.alm.estimate import Estimate, estimate_requests, reply_cost
from workbench.alm.parse import parse_reply
from workbench.alm.prompts import load_prompt, split_template
from workbench.errors import InputError

ANSWER = {"reason": "Tram bells and Czech speech.", "city": "Prague", "country": "Czechia",
          "continent": "Europe", "longitude": 14.42, "latitude": 50.08}


def test_plain_json_reply_is_read() -> None:
    parsed = parse_reply(json.dumps(ANSWER))
    assert parsed.status == "ok"
    assert (parsed.latitude, parsed.longitude) == (50.08, 14.42)
    assert parsed.fields["city"] == "Prague" and parsed.reason is None


def test_fenced_json_with_text_around() -> None:
    text = f"Here is my answer:\n```json\n{json.dumps(ANSWER, indent=2)}\n```\nThanks."
    parsed = parse_reply(text)
    assert parsed.status == "ok" and parsed.fields["country"] == "Czechia"


def test_braces_inside_the_reason_and_nested_objects() -> None:
    # AGL1K's first-{...}-match parser broke on exactly this.
    answer = dict(ANSWER, reason='I heard {bells} and "{a: 1}" in it', cues={"lang": {"name": "Czech"}})
    parsed = parse_reply("Draft {not json}\n" + json.dumps(answer))
    assert parsed.status == "ok"
    assert parsed.fields["reason"] == 'I heard {bells} and "{a: 1}" in it'


def test_the_last_object_with_a_location_wins() -> None:
    first = dict(ANSWER, city="Brno", latitude=49.19, longitude=16.6)
    parsed = parse_reply(f"First guess: {json.dumps(first)}\nFinal answer: {json.dumps(ANSWER)}")
    assert parsed.fields["city"] == "Prague" and parsed.latitude == 50.08


def test_refusal_text_is_a_reject_not_zero() -> None:
    parsed = parse_reply("I'm sorry, I cannot tell where this was recorded.")
    assert parsed.status == "rejected" and parsed.latitude is None and "no JSON" in (parsed.reason or "")


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"latitude": 0.0, "longitude": 0.0}, "0, 0"),
        ({"latitude": "Unknown"}, "no numeric latitude"),
        ({"latitude": 95.0}, "out of range"),
        ({"longitude": None}, "no numeric longitude"),
    ],
)
def test_unusable_coordinates_are_rejects_with_reasons(changes: dict, why: str) -> None:
    parsed = parse_reply(json.dumps(dict(ANSWER, **changes)))
    assert parsed.status == "rejected" and why in (parsed.reason or "")
    assert parsed.latitude is None and parsed.longitude is None
    # the fields stay as the model wrote them (the stored prediction keeps them)
    assert parsed.fields["city"] == "Prague"


def test_numbers_as_strings_and_key_aliases() -> None:
    parsed = parse_reply(json.dumps({"explanation": "x", "City": "Oslo", "lat": "59.91", "lon": "10.75"}))
    assert parsed.status == "ok" and (parsed.latitude, parsed.longitude) == (59.91, 10.75)
    assert parsed.fields["reason"] == "x"


def test_agl1k_prompt_missing_comma_is_repaired_and_recorded() -> None:
    # AGL1K's own prompt shows the JSON example without a comma after "reason"; replies copy it.
    text = '{\n  "reason": "Seagulls and Portuguese."\n  "city": "Lisbon",\n  "country": "Portugal",\n' \
           '  "continent": "Europe",\n  "longitude": -9.14,\n  "latitude": 38.72\n}'
    parsed = parse_reply(text)
    assert parsed.status == "ok" and parsed.repaired and parsed.fields["city"] == "Lisbon"


def test_structured_reply_and_empty_reply() -> None:
    assert parse_reply(json.dumps(ANSWER), structured=True).status == "ok"
    assert parse_reply("", structured=True).status == "rejected"
    assert parse_reply(None).reason == "empty reply"


def test_builtin_prompt_has_the_audio_after_the_text() -> None:
    prompt = load_prompt("agl1k")
    assert prompt.version == "agl1k-v1"
    assert prompt.before.startswith("You are an expert audio analyst")
    assert prompt.before.endswith("provide your JSON response now:") and prompt.after == ""


def test_builtin_prompt_is_agl1k_question_verbatim(shared_dir: Path) -> None:
    path = shared_dir / "data" / "agl1k" / "gemini-3-pro-preview_seed_42_ABCD.partial.jsonl"
    question = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["question"]
    assert load_prompt("agl1k-v1").text == question


def test_user_template_needs_one_audio_slot(tmp_path: Path) -> None:
    no_slot = tmp_path / "plain.txt"
    no_slot.write_text("Where was this recorded? Answer in JSON.", encoding="utf-8")
    with pytest.raises(InputError, match=r"plain.txt: the prompt template has no \{audio\} slot"):
        load_prompt(str(no_slot))
    good = tmp_path / "mine.txt"
    good.write_text("Listen:\n{audio}\nWhere? JSON {\"city\": ...}\n", encoding="utf-8")
    prompt = load_prompt(str(good))
    assert (prompt.before, prompt.after) == ("Listen:", 'Where? JSON {"city": ...}')
    version = prompt.version
    good.write_text("Listen again:\n{audio}\n", encoding="utf-8")
    assert load_prompt(str(good)).version != version  # an edit changes the fingerprint
    with pytest.raises(InputError, match="2 {audio} slots"):
        split_template("{audio}\n{audio}", "x")
    with pytest.raises(InputError, match="no prompt template"):
        load_prompt("no-such-template")


def test_config_defaults_are_written_and_typos_refused(tmp_path: Path) -> None:
    path = tmp_path / "alm.toml"
    config = load_alm_config(path)
    assert path.exists() and config.price("gpt-4o-audio-preview") is not None
    assert config.price("a-model-without-prices") is None
    path.write_text('[models."m"]\nprovider = "openai"\nprice_inptu = 1\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"alm.toml: \[models.m\] 'price_inptu' is not a known setting"):
        load_alm_config(path)
    path.write_text('[models."m"]\nprovider = "carrier-pigeon"\n', encoding="utf-8")
    with pytest.raises(InputError, match="provider"):
        load_alm_config(path)


def test_reply_cost_splits_audio_and_is_unknown_without_prices() -> None:
    price = Price(input=2.0, audio_input=40.0, output=10.0)
    cost = reply_cost(price, input_tokens=1000, audio_tokens=600, output_tokens=300)
    assert cost == pytest.approx((400 * 2.0 + 600 * 40.0 + 300 * 10.0) / 1e6)
    assert reply_cost(None, input_tokens=1, audio_tokens=0, output_tokens=1) is None
    assert reply_cost(price, input_tokens=None, audio_tokens=None, output_tokens=5) is None
    with_seconds = Price(input=1.0, audio_input=None, output=1.0, audio_second=0.001)
    assert reply_cost(with_seconds, input_tokens=0, audio_tokens=0, output_tokens=0, audio_seconds=60) == pytest.approx(0.06)


def test_estimate_from_durations() -> None:
    from workbench.alm.config import ModelEntry

    entry = ModelEntry(provider="gemini", audio_tokens_per_second=32, expected_output_tokens=400)
    price = Price(input=0.3, audio_input=1.0, output=2.5)
    estimate = estimate_requests(Estimate("m", "gemini", "g", "agl1k-v1"), [100.0, 50.0, None], "x" * 400,
                                 entry, price, 0.5)
    assert estimate.requests == 3 and estimate.unknown_duration == 1
    assert estimate.audio_tokens == 150 * 32
    assert estimate.output_tokens == 1200
    expected = (estimate.text_tokens * 0.3 + estimate.audio_tokens * 1.0 + 1200 * 2.5) / 1e6
    assert estimate.cost_usd == pytest.approx(expected)
    assert estimate.cost_batch_usd == pytest.approx(expected / 2)
    assert estimate.notes  # the unknown duration is said


def test_recordings_are_sent_as_they_are_unless_the_format_is_not_taken(tmp_path: Path) -> None:
    import hashlib

    import numpy as np
    import soundfile as sf

    from workbench.alm.providers import AnswerError, read_audio

    flac = tmp_path / "clip.flac"
    sf.write(flac, np.zeros((800, 2), dtype="float32"), 8000, format="FLAC")
    original = hashlib.sha256(flac.read_bytes()).hexdigest()
    kept = read_audio(flac, ("mp3", "wav", "flac"))
    assert (kept.format, kept.transcoded, kept.data) == ("flac", False, flac.read_bytes())
    converted = read_audio(flac, ("mp3", "wav"))
    assert converted.format == "wav" and converted.transcoded and converted.data[:4] == b"RIFF"
    assert converted.sha256 == original  # the fingerprint keys the recording, not the transcode
    assert converted.record("inline")["transcoded"] is True
    empty = tmp_path / "empty.mp3"
    empty.write_bytes(b"")
    with pytest.raises(AnswerError, match="empty"):
        read_audio(empty, ("mp3",))
    with pytest.raises(AnswerError, match="cannot read"):
        read_audio(tmp_path / "missing.mp3", ("mp3",))
