"""Who answered, how they listened (issue 45), in a real browser: the example questionnaire answered
through its plain form, a clip played, the page reloaded, and the listening record found kept by the
server and continued by the page; the guess stores what the server recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from storage import open_store
from storage import tables as T
from tests.web.browser import Server, chromium, click_map_at

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "questionnaire-example.toml"


def _read(db: Path, query):  # type: ignore[no-untyped-def]
    store = open_store(db)
    try:
        with store.read() as connection:
            return connection.execute(query).all()
    finally:
        store.dispose()


def answer_example(page) -> None:  # type: ignore[no-untyped-def]
    """Fill the example questionnaire as a person would (the screenshots use it too)."""
    form = page.get_by_test_id("questionnaire")
    form.wait_for()
    page.select_option("#q-home_country", "FR")
    page.select_option("#q-native_languages", ["fra"])
    page.select_option("#q-other_languages", ["eng", "deu"])
    page.select_option("#q-countries_lived", ["FR", "MA"])
    page.check("input[name=hearing][value=no_known_loss]")
    page.check("input[name=device][value=computer]")
    page.check("input[name=output][value=headphones]")


def test_the_questionnaire_is_answered_and_the_listening_record_survives_a_reload(tmp_path: Path) -> None:
    from web.tokens import invite_link
    from workbench.demo import create_demo_project
    from workbench.studies import web_study
    from workbench.studies.questionnaire import load_questionnaire

    db = create_demo_project(tmp_path / "demo").db_path
    store = open_store(db)
    try:
        web_study.create_study(store, "people", per_participant=1, headphone_check="off",
                               questionnaire=load_questionnaire(EXAMPLE), options={"must_hear_s": 1.5})
    finally:
        store.dispose()
    with Server(db, "people", tmp_path / "cache") as server, chromium() as browser:
        store = open_store(db)
        try:
            config, (nonce,) = web_study.invite(store, "people", 1)
        finally:
            store.dispose()
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.goto(invite_link(server.url, config, nonce))
        page.get_by_test_id("consent-agree").click()
        answer_example(page)
        page.get_by_test_id("questionnaire-submit").click()
        page.get_by_test_id("audio").wait_for(state="attached")
        (answers,) = _read(db, select(T.web_participant.c.answers, T.web_participant.c.device))
        assert answers.answers["home_country"] == "FR" and answers.answers["countries_lived"] == ["FR", "MA"]
        assert answers.device["class"] == "desktop" and answers.device["browser"] in ("Chrome", "HeadlessChrome",
                                                                                      "Chromium")
        assert page.get_by_test_id("submit").is_disabled()  # must hear 1.5 s first
        page.wait_for_function("() => document.getElementById('audio').readyState >= 1")
        page.get_by_test_id("play").click()
        page.wait_for_function("() => document.getElementById('audio').currentTime > 2.2", timeout=15_000)
        page.get_by_test_id("play").click()  # pause: the record is posted
        page.wait_for_function("() => !document.getElementById('submit').disabled")
        page.wait_for_timeout(500)
        (before,) = _read(db, select(T.web_assignment.c.listening))
        assert before.listening["heard_s"] >= 1.5 and before.listening["plays"] == 1
        page.reload()
        page.get_by_test_id("audio").wait_for(state="attached")
        (after,) = _read(db, select(T.web_assignment.c.listening))
        assert after.listening == before.listening  # kept across the reload
        page.wait_for_function("() => !document.getElementById('submit').disabled")  # the page continues it
        click_map_at(page, 48.0, 2.0)
        page.get_by_test_id("submit").click()
        page.get_by_test_id("completion-code").or_(page.locator("[data-testid=summary]")).first.wait_for()
        context.close()
    (guess,) = _read(db, select(T.web_guess.c.heard_s, T.web_guess.c.n_plays, T.web_guess.c.answer_s))
    assert guess.heard_s >= before.listening["heard_s"] and guess.n_plays == 1 and guess.answer_s > 2
