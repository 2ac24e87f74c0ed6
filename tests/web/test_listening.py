"""How she listened (issue 45): the listening record is merged on the server so that nothing decreases,
survives a reload, is bounded by the served duration and the server's time, and is what the guess
stores; the must-hear minimum refuses an earlier submit (409); the census covers the questionnaire
page and the listening route."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from storage import tables as T
from tests.web.census import find_hidden, hidden_values, without_fixed_lists
from tests.web.server_walk import CONSENT, app_for, invited, media_files, new_study
from workbench.errors import InputError
from workbench.studies import listening
from workbench.studies.questionnaire import load_questionnaire

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "questionnaire-example.toml"
A, G = T.web_assignment, T.web_guess


def _post(spans: list[list[float]], plays: int = 1, seeks: int = 0, played_s: float = 0.0) -> dict:
    return listening.check_record({"spans": spans, "plays": plays, "seeks": seeks, "played_s": played_s})


def test_the_merge_never_decreases_and_is_bounded() -> None:
    first = listening.merge(None, _post([[0, 4]], plays=2, seeks=1, played_s=4), duration_s=10, elapsed_s=60)
    assert first["heard_s"] == 4 and first["plays"] == 2 and first["seeks"] == 1
    # a page reloaded without its counters, or an older post arriving late: nothing goes down
    later = listening.merge(first, _post([[3, 6]], plays=1, seeks=0, played_s=2), duration_s=10, elapsed_s=60)
    assert later["spans"] == [[0, 6]] and later["heard_s"] == 6 and later["plays"] == 2 and later["played_s"] == 4
    again = listening.merge(later, _post([]), duration_s=10, elapsed_s=60)
    assert again == later
    # spans past the served duration + 1 s are cut there; playing time by the server's clock
    long = listening.merge(None, _post([[0, 500]], played_s=500), duration_s=10, elapsed_s=60)
    assert long["heard_s"] == 11 and long["played_s"] == 61
    # more heard than the time since the clip was shown allows (at double speed): refused
    with pytest.raises(InputError, match="time since the clip was shown"):
        listening.merge(None, _post([[0, 9]]), duration_s=10, elapsed_s=2)
    for bad in ({"spans": [[3, 1]]}, {"spans": [[0, float("nan")]]}, {"spans": "0-3"}, {"plays": -1},
                {"plays": True}, {"spans": [[0, 1]] * 1000}, []):
        with pytest.raises(InputError):
            listening.check_record(bad)
    assert listening.required_heard_s({"must_hear_s": 20}, 8.0) == 7.5  # a shorter clip: the whole clip
    assert listening.required_heard_s({"must_hear_share": 0.5}, 30.0) == 14.5
    assert listening.required_heard_s({}, 30.0) == 0.0


def _backdate(store, seconds: float) -> None:  # type: ignore[no-untyped-def]
    """As if the item's page had been served ``seconds`` ago (the record is bounded by that time)."""
    with store.write() as s:
        for row in s.execute(select(A.c.id, A.c.shown_at).where(A.c.shown_at.is_not(None))).all():
            s.execute(update(A).where(A.c.id == row.id).values(shown_at=row.shown_at - timedelta(seconds=seconds)))


def _start(project: Path, template: Path, **options):  # type: ignore[no-untyped-def]
    store, _ = new_study(project, "s1", per_participant=2, headphone_check="off", **options)
    walker = invited(store, "s1", app_for(store, "s1", template / "cache"))
    walker.consent()
    item, _ = walker.item()
    return store, walker, item


def test_the_listening_record_survives_a_reload_and_is_what_the_guess_stores(project: Path, template: Path) -> None:
    store, walker, item = _start(project, template)
    with store.read() as connection:
        shown = connection.execute(select(A.c.shown_at).where(A.c.item_id == item)).scalar_one()
    assert shown is not None
    _backdate(store, 120)
    one = walker.post_json("/api/listening", {"item_id": item, "spans": [[0, 2]], "plays": 1, "played_s": 2})
    assert one.status_code == 200 and one.json()["heard_s"] == 2
    two = walker.post_json("/api/listening", {"item_id": item, "spans": [[1.5, 3.5]], "plays": 2, "seeks": 1,
                                              "played_s": 3.5})
    assert two.json()["heard_s"] == 3.5
    # a reload: the same item, the record handed to the page to continue, shown_at unchanged
    again, _ = walker.item()
    assert again == item
    page = walker.page().text
    record = json.loads(re.search(r'data-record="([^"]+)"', page).group(1).replace("&#34;", '"'))
    assert record["spans"] == [[0.0, 3.5]] and record["plays"] == 2 and record["seeks"] == 1
    # a page restarted from zero after the reload posts less: nothing is lost
    walker.post_json("/api/listening", {"item_id": item, "spans": [[0, 1]], "plays": 1, "played_s": 1})
    with store.read() as connection:
        kept = connection.execute(select(A.c.listening, A.c.shown_at).where(A.c.item_id == item)).one()
    assert kept.listening["heard_s"] == 3.5 and kept.listening["plays"] == 2 and kept.shown_at < shown
    # refused posts: another's item, no CSRF token, a malformed record
    assert walker.post_json("/api/listening", {"item_id": "not-hers", "spans": []}).status_code == 404
    assert walker.post_json("/api/listening", {"item_id": item, "spans": []}, csrf="x").status_code == 403
    bad = walker.post_json("/api/listening", {"item_id": item, "spans": [[5, 1]]})
    assert bad.status_code == 400 and bad.json()["error"].count(".") <= 1
    # the submit's own numbers are only a fallback: the server's record is stored
    assert walker.guess(item, listen_s=999, n_plays=99, answer_s=1).status_code == 200
    with store.read() as connection:
        guess = connection.execute(select(G.c.heard_s, G.c.n_plays, G.c.n_seeks, G.c.listen_s, G.c.answer_s)).one()
    assert guess.heard_s == 3.5 and guess.n_plays == 2 and guess.n_seeks == 1 and guess.listen_s == 3.5
    assert 119 <= guess.answer_s < 200  # from shown_at, the server's time, not the page's 1 s
    store.dispose()


def test_must_hear_keeps_submit_disabled_and_the_server_refuses_an_early_answer(project: Path,
                                                                                template: Path) -> None:
    store, walker, item = _start(project, template, options={"must_hear_s": 3.0})
    page = walker.page().text
    assert 'data-testid="must-hear"' in page and 'data-must-hear-s="3.0"' in page
    assert re.search(r'<button[^>]*data-testid="submit"[^>]*\bdisabled\b', page)
    early = walker.guess(item)
    assert early.status_code == 409 and "listen to at least 3 seconds" in early.json()["error"]
    refusal = walker.guess(item, refused=True, latitude=None, longitude=None)
    assert refusal.status_code == 409  # "I can't tell" needs the same listening
    _backdate(store, 60)
    refused = walker.guess(item, listening={"spans": [[0, 1.0]], "plays": 1, "seeks": 0, "played_s": 1})
    assert refused.status_code == 409
    with store.read() as connection:  # the refused answer's record is kept all the same
        assert connection.execute(select(A.c.listening).where(A.c.item_id == item)).scalar_one()["heard_s"] == 1.0
    walker.post_json("/api/listening", {"item_id": item, "spans": [[0, 1.5]], "plays": 1})
    assert walker.guess(item).status_code == 409
    # the submit's last record counts like a post
    late = walker.guess(item, listening={"spans": [[1.5, 3.0]], "plays": 1, "seeks": 0, "played_s": 3})
    assert late.status_code == 200 and late.json()["created"] is True
    with store.read() as connection:
        assert connection.execute(select(G.c.heard_s)).scalar_one() == 3.0
    store.dispose()


def test_recognised_is_stored_only_where_the_study_asks(project: Path, template: Path) -> None:
    store, walker, item = _start(project, template, options={"recognise": True})
    page = walker.page().text
    assert all(f'data-testid="{hook}"' in page for hook in ("recognise-place", "recognise-language",
                                                           "recognise-language-name"))
    bad = walker.guess(item, recognised={"place": "yes"})
    assert bad.status_code == 400
    walker.guess(item, recognised={"place": True, "language": True, "language_name": "Darija"})
    with store.read() as connection:
        assert connection.execute(select(G.c.recognised)).scalar_one() == {"place": True, "language": True,
                                                                           "language_name": "Darija"}
    store.dispose()


def test_the_census_covers_the_questionnaire_and_the_listening_route(project: Path, template: Path) -> None:
    from tests.web.test_questionnaire import ANSWERS, _post_answers

    store, _ = new_study(project, "s1", per_participant=3, headphone_check="record", consent=CONSENT,
                         questionnaire=load_questionnaire(EXAMPLE), options={"recognise": True, "must_hear_s": 1.0})
    with store.read() as connection:
        keys = [k for (k,) in connection.execute(select(T.clip.c.key))]
    hidden = {v: w for v, w in hidden_values(store, keys, media_files(template)).items()
              if not w.endswith("title (word)")}  # as test_app_flow: the demo's titles are ordinary words
    walker = invited(store, "s1", app_for(store, "s1", template / "cache"))
    walker.consent()
    walker.page()
    walker.get("/static/listening.js")
    _post_answers(walker, {**ANSWERS, "home_country": ["ZZ"]})  # a refused form answers too
    assert _post_answers(walker, ANSWERS).status_code == 303
    walker.headphones()
    for _ in range(3):
        item, _ = walker.item()
        walker.listen(item)
        _backdate(store, 30)
        walker.post_json("/api/listening", {"item_id": item, "spans": [[0, 2]], "plays": 1, "played_s": 2})
        walker.post_json("/api/listening", {"item_id": item, "spans": [[9e9, 9e9]]})
        walker.post_json("/api/listening", {"item_id": item, "spans": [[3, 1]]})
        walker.item()  # the reload that carries her record
        walker.guess(item, recognised={"place": False, "language": True, "language_name": None})
    searched = [(w, d) for w, d in walker.received if "questionnaire" in w or "listening" in w or "GET /" in w]
    assert any("POST /api/listening" in w for w, _ in searched) and any("questionnaire" in w for w, _ in searched)
    # the questionnaire lists every country: the whole ISO list, the same for everyone, is taken out
    page = next(d for w, d in walker.received if w.startswith("body of GET") and b'data-testid="questionnaire"' in d)
    assert find_hidden(page, hidden) and without_fixed_lists(page) != page
    lone = page.replace(b"</form>", b'<select><option value="PL">Poland</option></select></form>')
    assert without_fixed_lists(b'<option value="PL">Poland</option>') == b'<option value="PL">Poland</option>'
    assert b"Poland" in without_fixed_lists(lone)
    leaks = [f"{what}: {found}" for what, data in walker.received
             for found in find_hidden(without_fixed_lists(data), hidden)]
    assert leaks == [], "\n".join(leaks[:20])
    store.dispose()
