"""A participant walks the study page in a real browser (Debian's Chromium through Playwright).

The study-mode walk runs on the two real AGL1K recordings (their file names and ID3 tags name the
place) and searches every byte the browser received — pages, scripts, styles, JSON, audio bytes
and tags, headers, cookies, URLs — for every hidden value of the clips: none may be there. The
other walks: game mode with the reveal, resume after a reload, a double submit, a tampered link,
markup in a clip's city shown as text, and no request to any other host.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from storage import open_store
from storage import tables as T
from tests.web.browser import Capture, Server, chromium, click_map_at
from tests.web.census import find_hidden, hidden_values

pytestmark = pytest.mark.slow

CONSENT = "You will hear short field recordings.\n\nGuess where each was made. **No** right answer is expected."
MARKUP = '<img src=x onerror="window.__leak=1"><script>window.__leak=1</script>'


def _links(db: Path, study: str, base_url: str, n: int) -> list[str]:
    from web.tokens import invite_link
    from workbench.studies import web_study

    store = open_store(db)
    try:
        config, nonces = web_study.invite(store, study, n)
        return [invite_link(base_url, config, nonce) for nonce in nonces]
    finally:
        store.dispose()


def _truth(db: Path, study: str, participant: str | None = None) -> tuple[int, list[int]]:
    """The newest started participant (or the pseudonym's) and her headphone answers."""
    from workbench.studies import web_session, web_study

    store = open_store(db)
    try:
        config = web_study.load_study(store, study)
        p = T.web_participant.c
        with store.read() as connection:
            query = select(p.id).where(p.study_id == config.id, p.started_at.is_not(None)).order_by(p.started_at.desc())
            if participant is not None:
                query = select(p.id).where(p.pseudonym == participant)
            pid = int(connection.execute(query).scalars().first())
        return pid, web_session.headphone_trials(config, pid)
    finally:
        store.dispose()


def _count(db: Path, table, *where) -> int:  # type: ignore[no-untyped-def]
    store = open_store(db)
    try:
        with store.read() as connection:
            return int(connection.execute(select(func.count()).select_from(table).where(*where)).scalar_one())
    finally:
        store.dispose()


def _consent_and_check(page, db: Path, study: str) -> None:  # type: ignore[no-untyped-def]
    page.get_by_test_id("consent-agree").click()
    _, answers = _truth(db, study)
    for answer in answers:
        page.get_by_test_id("hp-play").click()
        page.get_by_test_id(f"hp-answer-{answer}").click()


def _guess(page, latitude: float, longitude: float, clue: str = "") -> None:  # type: ignore[no-untyped-def]
    page.get_by_test_id("audio").wait_for(state="attached")
    page.get_by_test_id("play").click()
    click_map_at(page, latitude, longitude)
    page.get_by_test_id("confidence").fill("0.7")
    if clue:
        page.get_by_test_id("clue").fill(clue)
    page.get_by_test_id("submit").click()


@pytest.fixture
def real_study(tmp_path: Path, shared_dir: Path):  # type: ignore[no-untyped-def]
    from tests.web import real_project
    from workbench.studies import web_study

    db, keys, recordings = real_project.build(tmp_path, shared_dir)
    store = open_store(db)
    try:
        web_study.create_study(store, "crowd-1", per_participant=2, headphone_check="record", consent=CONSENT,
                               completion_code="DONE-4711")
        hidden = hidden_values(store, keys, recordings)
    finally:
        store.dispose()
    return db, keys, hidden


def test_a_study_walk_sends_no_hidden_value_on_the_real_recordings(real_study, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db, keys, hidden = real_study
    assert any("ID3" in what for what in hidden.values()) and any("Essaouira" in v for v in hidden)
    with Server(db, "crowd-1", tmp_path / "cache") as server, chromium() as browser:
        (link,) = _links(db, "crowd-1", server.url, 1)
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        capture = Capture()
        capture.attach(page)
        page.goto(link)
        _consent_and_check(page, db, "crowd-1")
        audio_urls = []
        for n, (lat, lon) in enumerate(((48.0, 2.0), (-33.9, 151.2)), start=1):
            page.get_by_test_id("progress").wait_for()
            assert page.get_by_test_id("progress").inner_text().strip().startswith(f"{n} of 2")
            audio = page.get_by_test_id("audio")
            audio.wait_for(state="attached")
            audio_urls.append(page.evaluate("el => el.currentSrc || el.src", audio.element_handle()))
            _guess(page, lat, lon, clue="birds and a voice")
            page.wait_for_function(f"() => !document.querySelector('[data-testid=progress]') || "
                                   f"!document.querySelector('[data-testid=progress]').innerText.startsWith('{n} of')")
        page.get_by_test_id("completion-code").wait_for()
        assert "DONE-4711" in page.get_by_test_id("completion-code").inner_text()
        # the whole recordings as the audio route sends them (the element may have read a range only)
        for url in audio_urls:
            response = context.request.get(url)
            assert response.ok, url
            body = response.body()
            assert len(body) > 100_000 and not body.startswith(b"ID3")
            capture.add(f"audio {url}", body)
            capture.add(f"audio headers {url}", "\n".join(f"{k}: {v}" for k, v in response.headers.items()).encode())
        capture.add("cookies", repr(context.cookies()).encode())
        capture.add("final page", page.content().encode())
        hosts = capture.hosts()
        context.close()
    assert hosts == {server.origin.split("://", 1)[1]}, f"requests to other hosts: {hosts}"
    assert len(capture.received) > 10
    leaks = [f"{what}: {found}" for what, data in capture.received for found in find_hidden(data, hidden)]
    assert leaks == [], "\n".join(leaks[:20])
    assert _count(db, T.web_guess) == 2


@pytest.fixture
def demo_study(tmp_path: Path):  # type: ignore[no-untyped-def]
    """The demo project (4 synthetic clips, one ALM) with a game and a study over it."""
    from workbench.demo import create_demo_project
    from workbench.studies import web_study

    db = create_demo_project(tmp_path / "demo").db_path
    store = open_store(db)
    try:
        with store.write() as s:  # markup in a clip's city: the reveal must show it as text
            s.execute(update(T.clip).where(T.clip.c.id == T.clip.c.id).values(city=MARKUP))
        web_study.create_study(store, "game-1", mode="game", per_participant=2, headphone_check="off")
        web_study.create_study(store, "study-1", per_participant=3, headphone_check="record", consent=CONSENT)
    finally:
        store.dispose()
    return db


def test_game_mode_reveals_after_the_guess_and_markup_stays_text(demo_study, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = demo_study
    with Server(db, "game-1", tmp_path / "cache") as server, chromium() as browser:
        (link,) = _links(db, "game-1", server.url, 1)
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(link)
        page.get_by_test_id("consent-agree").click()
        assert page.get_by_test_id("reveal").count() == 0
        _guess(page, 10.0, 10.0)
        reveal = page.get_by_test_id("reveal")
        reveal.wait_for()
        text = reveal.inner_text()
        assert "km" in text and "DEMO-ALM" in text
        assert "<script>" in text or "onerror" in text  # the city's markup is shown as text
        assert page.evaluate("() => window.__leak === undefined")
        assert page.locator(".pin-line").count() == 1  # the line from her guess to the place
        page.reload()  # the reveal's own address: the same reveal, her guess's line included
        page.get_by_test_id("reveal").wait_for()
        assert page.locator(".pin-line").count() == 1
        page.get_by_test_id("next").click()
        page.get_by_test_id("progress").wait_for()
        assert page.get_by_test_id("progress").inner_text().strip().startswith("2 of 2")


def test_a_reload_resumes_and_a_double_submit_stores_one_guess(demo_study, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = demo_study
    with Server(db, "study-1", tmp_path / "cache") as server, chromium() as browser:
        (link,) = _links(db, "study-1", server.url, 1)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(link)
        _consent_and_check(page, db, "study-1")
        page.get_by_test_id("progress").wait_for()
        page.reload()
        page.get_by_test_id("progress").wait_for()
        assert page.get_by_test_id("progress").inner_text().strip().startswith("1 of 3")
        page.get_by_test_id("audio").wait_for(state="attached")
        click_map_at(page, 20.0, 30.0)
        page.get_by_test_id("submit").dblclick()
        page.wait_for_function("() => document.querySelector('[data-testid=progress]').innerText.startsWith('2 of')")
        page.reload()
        page.get_by_test_id("progress").wait_for()
        assert page.get_by_test_id("progress").inner_text().strip().startswith("2 of 3")
        # the keyboard: Enter submits (here: I can't tell, then Enter)
        page.get_by_test_id("no-guess").click()
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.querySelector('[data-testid=progress]').innerText.startsWith('3 of')")
    assert _count(db, T.web_guess) == 2
    assert _count(db, T.web_guess, T.web_guess.c.refused.is_(True)) == 1


def test_a_tampered_link_is_refused_and_creates_nothing(demo_study, tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = demo_study
    with Server(db, "study-1", tmp_path / "cache") as server, chromium() as browser:
        (link,) = _links(db, "study-1", server.url, 1)
        started = _count(db, T.web_participant, T.web_participant.c.started_at.is_not(None))
        head, _, token = link.rpartition("/")
        forged = head + "/" + token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")
        page = browser.new_page()
        response = page.goto(forged)
        assert response is not None and response.status == 403
        assert page.get_by_test_id("consent-agree").count() == 0
        assert _count(db, T.web_participant, T.web_participant.c.started_at.is_not(None)) == started
        assert _count(db, T.web_assignment) == 0
