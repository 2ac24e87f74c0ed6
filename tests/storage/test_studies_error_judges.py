"""The judges' error-mode prompt through the fake Anthropic server, and agreement on error modes in the bundle."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from sqlmodel import select

from cli.main import main
from storage.models import JudgeErrorMode
from tests.cli_helpers import run_json
from tests.storage.studies_project import ALM, N_CLIPS, populate
from tests.support.fake_anthropic import FakeAnthropicAPI

KEY = "sk-ant-error-modes-0123456789"


@pytest.fixture
def project(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    from storage import open_store

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    store = open_store(tmp_path / "project.sqlite")
    populate(store)
    with FakeAnthropicAPI(expected_key=KEY) as api:
        yield store, str(tmp_path / "project.sqlite"), api, tmp_path
    store.dispose()


def _wrong_keys() -> tuple[set[str], set[str]]:
    """The fixture's far-off answers (every fourth clip) and refusals (i % 10 == 5)."""
    wrong = {f"clip{i:03d}" for i in range(N_CLIPS) if i % 4 == 0}
    refused = {f"clip{i:03d}" for i in range(N_CLIPS) if i % 10 == 5}
    return wrong, refused


def test_judges_are_asked_with_the_error_mode_prompt_and_replies_are_stored(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db, api, _ = project
    wrong, refused = _wrong_keys()
    out = run_json(capsys, "--db", db, "study", "judge-error-modes", "--alm", ALM, "--judges", "opus",
                   "--base-url", api.base_url, "--json")
    assert out["n_answers"] == len(wrong | refused) and out["prompt_version"] == "error-modes-v1"
    assert out["judges"][0]["ok"] == len(wrong | refused) and out["judges"][0]["failed"] == 0
    requests = api.message_requests()
    assert len(requests) == len(wrong | refused)
    first = requests[0].body
    system = "".join(b["text"] for b in first["system"])
    user = first["messages"][0]["content"]
    assert "error-mode taxonomy" in system and "bird_bias" in system and "Over" not in user
    assert "<<<COT_BEGIN>>>" in user and "Swedish announcement" in user
    assert first["output_config"]["format"]["type"] == "json_schema"
    with store.session() as s:
        rows = s.exec(select(JudgeErrorMode)).all()
    by_clip = {r.clip_id: r for r in rows}
    assert len(by_clip) == len(wrong | refused) and all(r.prompt_version == "error-modes-v1" for r in rows)
    refusal_rows = [r for r in rows if r.modes == "refusal"]
    assert len(refusal_rows) == len(refused)
    assert {r.modes for r in rows} == {"refusal", "language_ambiguity,bird_bias"}

    # an identical request is never sent again
    again = run_json(capsys, "--db", db, "study", "judge-error-modes", "--alm", ALM, "--judges", "opus",
                     "--base-url", api.base_url, "--json")
    assert again["judges"][0]["cached"] == len(wrong | refused) and len(api.message_requests()) == len(requests)


def test_a_reply_outside_the_taxonomy_is_a_stored_failure(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db, api, _ = project
    api.script.extend(["unknown_id", "refusal"])
    capsys.readouterr()
    rc = main(["--db", db, "study", "judge-error-modes", "--alm", ALM, "--judges", "haiku", "--limit", "3",
               "--base-url", api.base_url, "--json"])
    assert rc == 1
    out = json.loads(capsys.readouterr().out)
    reasons = [f["reason"] for f in out["judges"][0]["failures"]]
    assert len(reasons) == 2 and "schema" in reasons[0] and "refused" in reasons[1]
    with store.session() as s:
        failed = s.exec(select(JudgeErrorMode).where(JudgeErrorMode.status == "failed")).all()
    assert len(failed) == 2 and failed[0].raw_reply and "wild_guess" in failed[0].raw_reply


def test_agreement_on_error_modes_between_experts_and_judges_is_in_the_bundle(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db, api, tmp = project
    wrong, refused = _wrong_keys()
    run_json(capsys, "--db", db, "study", "judge-error-modes", "--alm", ALM, "--judges", "opus,sonnet",
             "--base-url", api.base_url, "--json")
    # two experts tag every wrong answer: one agrees with the judges everywhere, one says bird bias only
    for key in sorted(wrong | refused):
        agreeing = "refusal" if key in refused else "language_ambiguity,bird_bias"
        run_json(capsys, "--db", db, "--annotator", "ada", "study", "error-mode", "--clip", key, "--alm", ALM,
                 "--modes", agreeing, "--json")
        run_json(capsys, "--db", db, "--annotator", "bea", "study", "error-mode", "--clip", key, "--alm", ALM,
                 "--modes", "bird_bias", "--json")
    shares = run_json(capsys, "--db", db, "study", "error-modes", "--json")
    agreement = pd.DataFrame(shares["agreement"])
    refusal_pairs = agreement[(agreement["mode"] == "refusal") & (agreement["coefficient"] == "cohen_kappa")]
    ada_opus = refusal_pairs[(refusal_pairs["rater_a"] == "expert:annotator-0000")
                             & (refusal_pairs["rater_b"] == "judge:opus")]
    assert ada_opus["value"].iloc[0] == pytest.approx(1.0)
    bea_opus = refusal_pairs[(refusal_pairs["rater_a"] == "expert:annotator-0001")
                             & (refusal_pairs["rater_b"] == "judge:opus")]
    assert bea_opus["value"].iloc[0] == pytest.approx(0.0)  # bea never says refusal: chance-level agreement
    alpha = agreement[(agreement["mode"] == "refusal") & (agreement["coefficient"] == "krippendorff_alpha")]
    assert alpha["n_units"].iloc[0] == len(wrong | refused) and alpha["value"].iloc[0] < 1

    bundle = tmp / "bundle"
    assert main(["--db", db, "agreement", "--out", str(bundle), "--bootstrap", "10"]) == 0
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert "error_mode_agreement.csv" in manifest["files"]
    table = pd.read_csv(bundle / "error_mode_agreement.csv")
    bird = table[(table["mode"] == "bird_bias") & (table["coefficient"] == "percent_agreement")]
    assert set(bird["rater_a"]) >= {"expert:annotator-0000", "expert:annotator-0001"}
    assert (bird.set_index(["rater_a", "rater_b"]).loc[("judge:opus", "judge:sonnet"), "value"]) == pytest.approx(1.0)
