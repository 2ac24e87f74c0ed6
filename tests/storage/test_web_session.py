"""Web studies, the domain: creating a study, dealing clips, the headphone check, one guess per item.

The page (``web/``) and the commands only call :mod:`workbench.studies.web_study` and
:mod:`workbench.studies.web_session`; what a participant may see and what is stored is decided
here, so it is tested here without a server.
"""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import func, select

from storage import tables as T
from tests.storage.studies_project import N_CLIPS, link_audio, populate
from workbench.errors import InputError
from workbench.studies import web_session, web_study
from workbench.studies.web_session import NotAllowed

N_AUDIO = N_CLIPS - 4  # the last four clips of the fixture have no recording


@pytest.fixture
def project(tmp_path):  # type: ignore[no-untyped-def]
    from storage import open_store

    store = open_store(tmp_path / "project.sqlite")
    populate(store)
    link_audio(store, tmp_path / "media", [f"clip{i:03d}" for i in range(N_AUDIO)])
    yield store
    store.dispose()


def _count(store, table) -> int:  # type: ignore[no-untyped-def]
    with store.read() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())


def _through_check(store, study, pid):  # type: ignore[no-untyped-def]
    web_session.consent(store, study, pid)
    return web_session.record_headphones(store, study, pid, web_session.headphone_trials(study, pid))


def test_a_study_takes_only_clips_with_playable_audio_and_lists_the_others(project) -> None:  # type: ignore[no-untyped-def]
    study, excluded = web_study.create_study(project, "crowd-1", per_participant=5)
    assert study.n_items == N_AUDIO
    assert sorted(e["key"] for e in excluded) == [f"clip{i:03d}" for i in range(N_AUDIO, N_CLIPS)]
    assert all("no usable recording" in e["reason"] for e in excluded)
    assert "secret" not in study.public()


@pytest.mark.parametrize("kwargs,words", [
    ({"mode": "race"}, "--mode 'race'"),
    ({"headphone_check": "maybe"}, "--headphone-check"),
    ({"per_participant": 0}, "--per-participant 0"),
    ({"target_per_clip": 0}, "--target-per-clip 0"),
    ({"attention": [f"clip{N_CLIPS - 1:03d}"]}, "must be playable"),
    ({"practice": "nope"}, "must be playable"),
    ({"completion_url": "javascript:alert(1)"}, "--completion-url"),
    ({"completion_code": "a b"}, "--completion-code"),
    ({"clips": ["clip001"], "selection": "latest"}, "not both"),
    ({"rules": {"be_nice": True}}, "unknown exclusion rule"),
])
def test_a_refused_study_stores_nothing(project, kwargs, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=words.replace("(", r"\(")):
        web_study.create_study(project, "crowd-x", **kwargs)
    assert _count(project, T.web_study) == 0 and _count(project, T.web_study_clip) == 0


def test_names_are_checked_and_unique(project) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="study name"):
        web_study.create_study(project, "<b>crowd</b>")
    web_study.create_study(project, "crowd-1")
    with pytest.raises(InputError, match="exists already"):
        web_study.create_study(project, "crowd-1")
    with pytest.raises(InputError, match="known: crowd-1"):
        web_study.load_study(project, "crowd-2")


def test_clips_are_dealt_least_assigned_first_and_balanced_over_strata(project) -> None:  # type: ignore[no-untyped-def]
    study, _ = web_study.create_study(project, "crowd-1", per_participant=6, target_per_clip=2, seed=3)
    study, nonces = web_study.invite(project, "crowd-1", 12)
    for nonce in nonces:
        web_session.consent(project, study, web_session.enter_by_invite(project, study, nonce))
    with project.read() as connection:
        counts = Counter(c for (c,) in connection.execute(select(T.web_assignment.c.clip_id)))
        strata = {c: s for c, s in connection.execute(select(T.web_study_clip.c.clip_id, T.web_study_clip.c.stratum))}
        per_participant = connection.execute(select(T.web_assignment.c.participant_id, T.web_assignment.c.clip_id)).all()
    # 12 × 6 = 72 deals over 36 clips: least-assigned first gives every clip exactly two
    assert set(counts.values()) == {2} and len(counts) == N_AUDIO
    by_participant: dict[int, list[str]] = {}
    for participant, clip in per_participant:
        by_participant.setdefault(participant, []).append(strata[clip])
    for seen in by_participant.values():
        tally = Counter(seen)
        # six clips over six strata (3 continents × speech): one of each
        assert len(seen) == 6 and max(tally.values()) - min(tally.values()) <= 1 and len(tally) == 6


def test_each_participant_gets_her_own_order_and_attention_and_practice_clips(project) -> None:  # type: ignore[no-untyped-def]
    study, _ = web_study.create_study(project, "crowd-1", per_participant=4, attention=["clip000"],
                                      practice="clip001")
    study, nonces = web_study.invite(project, "crowd-1", 2)
    states = []
    for nonce in nonces:
        pid = web_session.enter_by_invite(project, study, nonce)
        states.append(_through_check(project, study, pid))
    for s in states:
        assert s.stage == "items" and s.item is not None
        assert s.item.kind == "practice" and s.item.position == 0 and s.total == 5  # 4 items + 1 attention
    with project.read() as connection:
        rows = connection.execute(select(T.web_assignment.c.participant_id, T.web_assignment.c.kind,
                                         T.web_assignment.c.clip_id, T.web_assignment.c.item_id)).all()
    kinds = Counter((r.participant_id, r.kind) for r in rows)
    assert set(kinds.values()) == {1, 4} and len(kinds) == 6
    assert len({r.item_id for r in rows}) == len(rows)  # opaque ids are never shared
    assert all("clip" not in r.item_id for r in rows)


def test_a_reload_and_a_second_consent_change_nothing(project) -> None:  # type: ignore[no-untyped-def]
    study, _ = web_study.create_study(project, "crowd-1", per_participant=3)
    study, (nonce,) = web_study.invite(project, "crowd-1", 1)
    pid = web_session.enter_by_invite(project, study, nonce)
    assert web_session.enter_by_invite(project, study, nonce) == pid
    first = _through_check(project, study, pid)
    assert web_session.consent(project, study, pid).item == first.item
    assert _count(project, T.web_assignment) == 3
    assert web_session.state(project, study, pid) == first


def test_the_headphone_check_is_scored_on_the_server_once(project) -> None:  # type: ignore[no-untyped-def]
    study, _ = web_study.create_study(project, "crowd-1", per_participant=3, headphone_check="screen")
    study, nonces = web_study.invite(project, "crowd-1", 2)
    good, bad = (web_session.enter_by_invite(project, study, n) for n in nonces)
    with pytest.raises(NotAllowed, match="consent comes first"):
        web_session.record_headphones(project, study, good, [1] * 6)
    web_session.consent(project, study, good)
    web_session.consent(project, study, bad)
    truth = web_session.headphone_trials(study, bad)
    wrong = [t % 3 + 1 for t in truth]  # every answer wrong
    assert web_session.record_headphones(project, study, bad, wrong).stage == "screened_out"
    # a second try cannot pass the check
    assert web_session.record_headphones(project, study, bad, truth).stage == "screened_out"
    assert web_session.record_headphones(project, study, good, web_session.headphone_trials(study, good)).stage == "items"
    with pytest.raises(InputError, match="6 answers"):
        web_session.record_headphones(project, study, good, [1, 2])
    item = web_session.consent(project, study, good).item
    assert item is not None
    with pytest.raises(NotAllowed, match="ended"):
        web_session.submit(project, study, bad, item.item_id, web_session.check_answer({"refused": True}))


def test_one_guess_per_item_and_items_of_another_participant_are_refused(project) -> None:  # type: ignore[no-untyped-def]
    study, _ = web_study.create_study(project, "crowd-1", per_participant=2)
    study, nonces = web_study.invite(project, "crowd-1", 2)
    alice, bob = (web_session.enter_by_invite(project, study, n) for n in nonces)
    a_state, b_state = _through_check(project, study, alice), _through_check(project, study, bob)
    answer = web_session.check_answer({"latitude": 48.1, "longitude": "11.5", "confidence": 0.6, "clue": "trams"})
    assert a_state.item is not None and b_state.item is not None
    with pytest.raises(NotAllowed, match="no such item"):
        web_session.submit(project, study, alice, b_state.item.item_id, answer)
    first = web_session.submit(project, study, alice, a_state.item.item_id, answer)
    again = web_session.submit(project, study, alice, a_state.item.item_id, web_session.check_answer({"refused": True}))
    assert first.created and not again.created
    assert _count(project, T.web_guess) == 1
    with project.read() as connection:
        stored = connection.execute(select(T.web_guess)).one()
    assert (stored.latitude, stored.longitude, stored.refused, stored.clue) == (48.1, 11.5, False, "trams")
    assert first.state.done == 1 and first.state.item is not None and first.state.item.position == 2


@pytest.mark.parametrize("values,words", [
    ({"latitude": 95, "longitude": 0}, "latitude"),
    ({"latitude": 10, "longitude": -181}, "longitude"),
    ({"latitude": "nan", "longitude": 0}, "latitude"),
    ({"latitude": "٣", "longitude": 0}, "latitude"),
    ({"longitude": 3}, "latitude is missing"),
    ({"latitude": 1, "longitude": 1, "confidence": 1.5}, "confidence"),
    ({"latitude": 1, "longitude": 1, "clue": "x" * 501}, "501 characters"),
    ({"latitude": 1, "longitude": 1, "clue": "a\x00b"}, "control characters"),
    ({"latitude": True, "longitude": 1}, "latitude must be a number"),
])
def test_answers_are_validated_with_one_sentence(values, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=words) as caught:
        web_session.check_answer(values)
    assert "\n" not in str(caught.value)


def test_study_mode_reveals_nothing_game_mode_only_after_the_guess(project) -> None:  # type: ignore[no-untyped-def]
    for name, mode in (("blind-1", "study"), ("game-1", "game")):
        study, _ = web_study.create_study(project, name, per_participant=2, mode=mode, headphone_check="off")
        study, (nonce,) = web_study.invite(project, name, 1)
        pid = web_session.enter_by_invite(project, study, nonce)
        item = web_session.consent(project, study, pid).item
        assert item is not None
        with pytest.raises(NotAllowed):
            web_session.reveal(project, study, pid, item.item_id)
        web_session.submit(project, study, pid, item.item_id,
                           web_session.check_answer({"latitude": 0, "longitude": 0}))
        if mode == "study":
            with pytest.raises(NotAllowed, match="reveals nothing"):
                web_session.reveal(project, study, pid, item.item_id)
            with pytest.raises(NotAllowed, match="when you have finished"):
                web_session.summary(project, study, pid)
        else:
            shown = web_session.reveal(project, study, pid, item.item_id)
            assert shown.error_km is not None and shown.error_km > 0
            assert [m["model"] for m in shown.models] == ["alm-x"]
            assert shown.score["n"] == 1


def test_a_panel_id_is_stored_only_as_a_salted_hash(project) -> None:  # type: ignore[no-untyped-def]
    study, _ = web_study.create_study(project, "crowd-1")
    other, _ = web_study.create_study(project, "crowd-2")
    pid = web_session.enter_by_panel(project, study, "5f3c0ffee")
    assert web_session.enter_by_panel(project, study, "5f3c0ffee") == pid
    with project.read() as connection:
        row = connection.execute(select(T.web_participant).where(T.web_participant.c.id == pid)).one()
    assert "5f3c0ffee" not in repr(tuple(row)) and row.pseudonym.startswith("p-") and len(row.pseudonym) == 10
    assert web_session.panel_hash(study, "5f3c0ffee") != web_session.panel_hash(other, "5f3c0ffee")
    with pytest.raises(InputError, match="PROLIFIC_PID"):
        web_session.enter_by_panel(project, study, "  ")
