"""`aglw study web / invite / participants` and the participant flow (workbench/studies/web_flow.py).

A small project (40 clips, 36 with a recording); simulated participants are driven through
:mod:`workbench.studies.web_session` exactly as the page drives them, and the flow, each
exclusion rule and the JSON contracts are checked against what they did.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from cli.main import main
from storage import tables as T
from tests.cli_helpers import run_json
from tests.storage.studies_project import N_CLIPS, link_audio, populate
from workbench.studies import web_flow, web_session, web_study

N_AUDIO = N_CLIPS - 4  # the last four clips of the fixture have no recording
NO_AUDIO = f"clip{N_CLIPS - 1:03d}"
PANEL_ID = "PANELID5f2a9c"


@pytest.fixture
def project(tmp_path):  # type: ignore[no-untyped-def]
    from storage import open_store

    db = tmp_path / "project.sqlite"
    store = open_store(db)
    populate(store)
    link_audio(store, tmp_path / "media", [f"clip{i:03d}" for i in range(N_AUDIO)])
    yield store, str(db)
    store.dispose()


def _count(store, table) -> int:  # type: ignore[no-untyped-def]
    with store.read() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())


def _run(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


# --- study web ---------------------------------------------------------------------------------

def test_study_web_creates_the_study_and_names_the_clips_left_out(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db = project
    rc, out, err = _run(capsys, "--db", db, "study", "web", "crowd-1", "--clips", "all", "--per-participant", "4",
                        "--attention", "clip000", "--attention-misses", "1", "--min-median-listen", "3")
    assert rc == 0, err
    assert f"{N_AUDIO - 1} clips to guess, 1 attention clip(s)" in out
    assert "left out 4 clip(s) without playable audio" in out and f"{NO_AUDIO}: no usable recording" in out
    assert "more (--json lists every one)" not in out  # four are listed in full
    config = web_study.load_study(store, "crowd-1")
    assert config.rules["max_attention_missed"] == 1 and config.rules["min_median_listen_s"] == 3.0
    payload = run_json(capsys, "--db", db, "--json", "study", "web", "crowd-2", "--clips", "clip001,clip002,"
                       + NO_AUDIO, "--mode", "game", "--headphone-check", "off", "--failed-headphones", "keep")
    assert set(payload) == {*web_study.load_study(store, "crowd-2").public(), "excluded"}
    assert "secret" not in payload
    assert payload["n_items"] == 2 and payload["mode"] == "game" and payload["rules"]["headphones_failed"] is False
    assert payload["excluded"] == [{"key": NO_AUDIO, "reason": payload["excluded"][0]["reason"]}]


@pytest.mark.parametrize("argv,status,words", [
    (["--clips", "all", "--mode", "race"], 2, "--mode"),
    (["--clips", "all", "--headphone-check", "maybe"], 2, "--headphone-check"),
    ([], 2, "--selection"),
    (["--clips", "all", "--selection", "latest"], 2, "one of them"),
    (["--clips", NO_AUDIO], 1, "a web study draws only clips that can be listened to"),
    (["--clips", "all", "--attention", NO_AUDIO], 1, "must be playable"),
    (["--clips", "all", "--per-participant", "0"], 2, "--per-participant"),
    (["--clips", "all", "--per-participant", "501"], 2, "give 1 to 500"),
    (["--clips", "all", "--target-per-clip", "0"], 2, "--target-per-clip"),
    (["--clips", "all", "--completion-url", "javascript:alert(1)"], 1, "--completion-url"),
    (["--clips", "all", "--attention-misses", "-1"], 2, "--attention-misses"),
    (["--clips", "all", "--failed-headphones", "ignore"], 2, "--failed-headphones"),
    (["--clips", "all", "--consent", "/nonexistent/consent.md"], 1, "--consent"),
    (["--clips", "nope"], 1, "no clip with key 'nope'"),
])
def test_study_web_refusals_store_nothing(project, capsys, argv, status, words) -> None:  # type: ignore[no-untyped-def]
    store, db = project
    rc, out, err = _run(capsys, "--db", db, "study", "web", "crowd-x", *argv)
    assert rc == status, err
    assert words in err and out == ""
    assert len(err.strip().splitlines()) <= 2  # one line (a usage error adds click's hint line at most)
    assert _count(store, T.web_study) == 0 and _count(store, T.web_study_clip) == 0


def test_a_duplicate_name_is_refused_and_the_first_study_stays(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db = project
    assert _run(capsys, "--db", db, "study", "web", "crowd-1", "--clips", "clip001,clip002")[0] == 0
    rc, out, err = _run(capsys, "--db", db, "study", "web", "crowd-1", "--clips", "all")
    assert rc == 1 and "exists already" in err
    assert _count(store, T.web_study) == 1 and _count(store, T.web_study_clip) == 2


# --- study invite ------------------------------------------------------------------------------

def test_invite_links_verify_with_the_study_secret(project, capsys) -> None:  # type: ignore[no-untyped-def]
    from web import tokens

    store, db = project
    web_study.create_study(store, "crowd-1", per_participant=3)
    rc, out, err = _run(capsys, "--db", db, "study", "invite", "crowd-1", "--n", "3", "--base-url",
                        "https://study.example.org/crowd/")
    assert rc == 0 and err == ""
    links = out.split()
    assert len(links) == 3 and all(link.startswith("https://study.example.org/crowd/i/") for link in links)
    config = web_study.load_study(store, "crowd-1")
    nonces = {tokens.read_invite(config, link.rsplit("/", 1)[1]) for link in links}
    with store.read() as connection:
        stored = {n for (n,) in connection.execute(select(T.web_participant.c.invite_nonce))}
    assert nonces == stored and len(stored) == 3
    payload = run_json(capsys, "--db", db, "--json", "study", "invite", "crowd-1", "--n", "2")
    assert set(payload) == {"study", "links"} and payload["study"] == "crowd-1" and len(payload["links"]) == 2
    # a link of another study does not verify
    other, _ = web_study.create_study(store, "crowd-2", per_participant=3)
    with pytest.raises(tokens.BadToken):
        tokens.read_invite(other, links[0].rsplit("/", 1)[1])


def test_the_open_link_carries_prolifics_placeholders(project, capsys) -> None:  # type: ignore[no-untyped-def]
    from web import tokens

    store, db = project
    web_study.create_study(store, "crowd-1", per_participant=3)
    payload = run_json(capsys, "--db", db, "--json", "study", "invite", "crowd-1", "--open")
    (link,) = payload["links"]
    token, _, query = link.rsplit("/", 1)[1].partition("?")
    tokens.read_open(web_study.load_study(store, "crowd-1"), token)
    assert query == "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    assert _count(store, T.web_participant) == 0  # the open link invites nobody in advance
    for argv in (["--open", "--n", "2"], []):
        rc, _, err = _run(capsys, "--db", db, "study", "invite", "crowd-1", *argv)
        assert rc == 2 and "--n" in err
    rc, _, err = _run(capsys, "--db", db, "study", "invite", "crowd-1", "--n", "1", "--base-url", "ftp://x")
    assert rc == 2 and "--base-url" in err
    rc, _, err = _run(capsys, "--db", db, "study", "invite", "crowd-1", "--n", "0")
    assert rc == 2 and "--n" in err and _count(store, T.web_participant) == 0
    rc, _, err = _run(capsys, "--db", db, "study", "invite", "crowd-9", "--n", "1")
    assert rc == 1 and "no web study 'crowd-9'" in err


# --- the flow and the exclusions ---------------------------------------------------------------

def _positions(store) -> dict[int, tuple[float, float]]:  # type: ignore[no-untyped-def]
    with store.read() as connection:
        return {int(i): (float(a), float(b)) for i, a, b in
                connection.execute(select(T.clip.c.id, T.clip.c.latitude, T.clip.c.longitude))}


def _play(store, study, pid, *, listen=20.0, attention="hit", stop_after=None):  # type: ignore[no-untyped-def]
    """Answer her items as the page would: on the clip itself (attention: per ``attention``)."""
    where = _positions(store)
    state = web_session.state(store, study, pid)
    answered = 0
    while state.stage == "items" and (stop_after is None or answered < stop_after):
        item = state.item
        clip = web_session.item_clip(store, study, pid, item.item_id)
        lat, lon = where[clip]
        values = {"latitude": lat, "longitude": lon, "confidence": 0.5, "listen_s": listen}
        if clip == study_attention(store, study):
            if attention == "refuse":
                values = {"refused": True, "listen_s": listen}
            elif attention == "far":
                values = {"latitude": -lat, "longitude": lon + (180 if lon < 0 else -180), "listen_s": listen}
        state = web_session.submit(store, study, pid, item.item_id, web_session.check_answer(values)).state
        answered += 1
    return state


def study_attention(store, study) -> int | None:  # type: ignore[no-untyped-def]
    c = T.web_study_clip.c
    with store.read() as connection:
        row = connection.execute(select(c.clip_id).where(c.study_id == study.id, c.role == "attention")).first()
    return None if row is None else int(row.clip_id)


def _check(store, study, pid, *, passed=True):  # type: ignore[no-untyped-def]
    web_session.consent(store, study, pid)
    truth = web_session.headphone_trials(study, pid)
    return web_session.record_headphones(store, study, pid, truth if passed else [t % 3 + 1 for t in truth])


def test_the_flow_counts_every_stage_and_each_rule_excludes(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db = project
    study, _ = web_study.create_study(store, "crowd-1", per_participant=3, headphone_check="record",
                                      attention=["clip000"], rules={"max_attention_missed": 0,
                                                                     "min_median_listen_s": 5.0})
    study, nonces = web_study.invite(store, "crowd-1", 8)
    enter = [web_session.enter_by_invite(store, study, n) for n in nonces[1:]]  # the first never opens hers
    started, consenting, deaf, careless, hasty, good, halfway = enter
    web_session.consent(store, study, consenting)  # and stops before the headphone check
    _check(store, study, deaf, passed=False)
    _play(store, study, deaf)
    _check(store, study, careless)
    _play(store, study, careless, attention="refuse")
    _check(store, study, hasty)
    _play(store, study, hasty, listen=1.0)
    _check(store, study, good)
    _play(store, study, good)
    _check(store, study, halfway)
    _play(store, study, halfway, stop_after=1)
    panel = web_session.enter_by_panel(store, study, PANEL_ID)
    _check(store, study, panel)
    _play(store, study, panel, attention="far")

    flow = web_flow.participant_flow(store, "crowd-1")
    assert flow.counts == {"invited": 8, "started": 8, "consented": 7, "passed_headphones": 5, "finished": 5,
                           "excluded": 4, "analyzed": 1}
    by_id = {p.id: p for p in flow.participants}
    assert by_id[started].status == "started" and by_id[consenting].status == "consented"
    assert by_id[halfway].status == "in progress" and by_id[halfway].n_guesses in (0, 1)
    assert [by_id[x].rules for x in (deaf, careless, hasty, panel)] == [
        ("headphones_failed",), ("max_attention_missed",), ("min_median_listen_s",), ("max_attention_missed",)]
    assert "headphone check" in by_id[deaf].reason and "missed 1 of 1 attention" in by_id[careless].reason
    assert "median listening time 1.0 s" in by_id[hasty].reason
    assert by_id[good].analyzed and not by_id[good].excluded and by_id[good].n_guesses == 3
    assert web_flow.analyzed_participants(store, "crowd-1") == {good: by_id[good].participant}
    assert flow.details["excluded_by"] == {"headphones_failed": 1, "max_attention_missed": 2,
                                           "min_median_listen_s": 1}

    payload = run_json(capsys, "--db", db, "--json", "study", "participants", "crowd-1")
    assert set(payload) == {"study", "mode", "flow", "participants"}
    assert payload["study"] == "crowd-1" and payload["mode"] == "study" and payload["flow"] == flow.counts
    assert len(payload["participants"]) == 9
    for row in payload["participants"]:
        assert set(row) == {"participant", "status", "n_guesses", "excluded", "reason", "answers", "device", "listening"}
        assert row["participant"].startswith("p-") and row["status"] in web_flow.STATUSES
        assert (row["reason"] is None) == (not row["excluded"])
    rc, out, err = _run(capsys, "--db", db, "study", "participants", "crowd-1")
    assert rc == 0 and err == ""
    assert "invited 8, started 8, consented 7, passed the headphone check 5, finished 5" in out
    assert "analyzed 1" in out and "finished and not excluded" in out
    assert all(p.participant in out for p in flow.participants)
    assert PANEL_ID not in out and PANEL_ID not in json.dumps(payload)  # pseudonyms only


def test_rules_off_exclude_nobody_and_the_screen_is_its_own_box(project) -> None:  # type: ignore[no-untyped-def]
    store, _ = project
    study, _ = web_study.create_study(store, "kept", per_participant=2, headphone_check="record",
                                      attention=["clip000"], rules={"headphones_failed": False,
                                                                    "max_attention_missed": 1})
    study, nonces = web_study.invite(store, "kept", 2)
    deaf, careless = (web_session.enter_by_invite(store, study, n) for n in nonces)
    _check(store, study, deaf, passed=False)
    _play(store, study, deaf, listen=0.0)
    _check(store, study, careless)
    _play(store, study, careless, attention="refuse")
    flow = web_flow.participant_flow(store, "kept")
    assert flow.counts["finished"] == 2 and flow.counts["excluded"] == 0 and flow.counts["analyzed"] == 2
    assert flow.counts["passed_headphones"] == 1

    screen, _ = web_study.create_study(store, "screened", per_participant=2, headphone_check="screen")
    screen, (nonce,) = web_study.invite(store, "screened", 1)
    pid = web_session.enter_by_invite(store, screen, nonce)
    assert _check(store, screen, pid, passed=False).stage == "screened_out"
    flow = web_flow.participant_flow(store, "screened")
    (only,) = flow.participants
    assert only.status == "screened out" and not only.excluded and not only.analyzed
    assert flow.counts["consented"] == 1 and flow.counts["passed_headphones"] == 0
    assert flow.details["screened_out"] == 1 and flow.counts["excluded"] == 0


def test_without_a_check_every_consenting_participant_goes_on(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db = project
    study, _ = web_study.create_study(store, "open", per_participant=2, headphone_check="off")
    pid = web_session.enter_by_panel(store, study, PANEL_ID)
    web_session.consent(store, study, pid)
    flow = web_flow.participant_flow(store, "open")
    assert flow.counts == {"invited": 0, "started": 1, "consented": 1, "passed_headphones": 1, "finished": 0,
                           "excluded": 0, "analyzed": 0}
    assert flow.participants[0].status == "in progress"
    rc, out, _ = _run(capsys, "--db", db, "study", "participants", "open")
    assert rc == 0 and "no headphone check (1 go on)" in out


def test_the_flow_counts_alike_on_sqlite_and_postgresql(any_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = any_store
    populate(store)
    link_audio(store, tmp_path / "media", [f"clip{i:03d}" for i in range(N_AUDIO)])
    study, _ = web_study.create_study(store, "crowd-1", per_participant=2, attention=["clip000"],
                                      rules={"min_median_listen_s": 5.0})
    study, nonces = web_study.invite(store, "crowd-1", 4)
    deaf, careless, good = (web_session.enter_by_invite(store, study, n) for n in nonces[1:])
    _check(store, study, deaf, passed=False)
    _play(store, study, deaf, listen=1.0)
    _check(store, study, careless)
    _play(store, study, careless, attention="refuse")
    _check(store, study, good)
    _play(store, study, good)
    flow = web_flow.participant_flow(store, "crowd-1")
    assert flow.counts == {"invited": 4, "started": 3, "consented": 3, "passed_headphones": 2, "finished": 3,
                           "excluded": 2, "analyzed": 1}
    rules = {p.id: p.rules for p in flow.participants}
    assert rules[deaf] == ("headphones_failed", "min_median_listen_s") and rules[careless] == ("max_attention_missed",)
    assert web_flow.analyzed_participants(store, study) == {good: next(p.participant for p in flow.participants
                                                                       if p.id == good)}


def test_invite_without_the_web_extra_names_it_in_one_line(project, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sys

    store, db = project
    web_study.create_study(store, "crowd-1", per_participant=3)
    monkeypatch.setitem(sys.modules, "itsdangerous", None)  # as if the [web] extra were not installed
    rc, out, err = _run(capsys, "--db", db, "study", "invite", "crowd-1", "--n", "2")
    assert rc == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "pip install 'agl-workbench[web]'" in err
    assert _count(store, T.web_participant) == 0  # no invitation minted that could not be signed
