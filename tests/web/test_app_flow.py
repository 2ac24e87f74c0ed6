"""The study page's flow, server side: each stage's page, resume after a reload, one guess per item,
the game's reveal only after the stored guess, study mode never revealing, and the blinding census
over every byte of a full walk (design/web-study.md "Blinding, stated as a test")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from storage import tables as T
from tests.web.census import find_hidden, hidden_values
from tests.web.server_walk import (BASE, CONSENT, app_for, count, invited, media_files, new_study)

G = T.web_guess


def _keys(store) -> list[str]:  # type: ignore[no-untyped-def]
    with store.read() as connection:
        return [k for (k,) in connection.execute(T.clip.select().with_only_columns(T.clip.c.key))]


def test_each_stage_shows_its_page_and_a_reload_resumes(project: Path, template: Path) -> None:
    store, config = new_study(project, "s1", per_participant=3, headphone_check="record", consent=CONSENT,
                              completion_code="DONE-1")
    app = app_for(store, "s1", template / "cache")
    walker = invited(store, "s1", app)
    entry = walker.received[2][1].decode()
    # the entry page continues same-origin (a Strict cookie is not sent on a cross-site redirect)
    assert 'http-equiv="refresh" content="0; url=/"' in entry
    page = walker.page().text
    assert 'data-testid="consent-agree"' in page
    # the consent's Markdown: bold kept, its markup shown as text
    assert "<strong>short</strong>" in page and "&lt;script&gt;" in page and "<script>window" not in page
    assert "<script>" not in page.replace('<script src="/static/', "")
    walker.consent()
    page = walker.page().text
    assert all(f'data-testid="hp-answer-{n}"' in page for n in (1, 2, 3)) and 'data-testid="hp-play"' in page
    # every button comes disabled and its script enables it: a press before the script was ready
    # did nothing (the browser walk's click on Play was lost under load, the answers stayed disabled)
    assert re.search(r'<button[^>]*data-testid="hp-play"[^>]*\bdisabled\b', page)
    wav = walker.client.get("/hp/1.wav")
    assert wav.status_code == 200 and wav.content[:4] == b"RIFF" and wav.headers["content-type"] == "audio/wav"
    import io

    import soundfile as sf

    tones, rate = sf.read(io.BytesIO(wav.content))
    assert tones.shape[1] == 2 and rate == 16_000 and len(wav.content) < 300_000  # stereo, 4 s: 256 kB
    assert walker.headphones().json() == {"stage": "items"}
    first, progress = walker.item()
    assert progress == "1 of 3"
    page = walker.page().text
    for hook in ('data-testid="audio"', 'preload="metadata"', 'data-testid="play"', 'data-testid="map"',
                 'data-projection="equirectangular"', 'data-bounds="', 'data-testid="confidence"',
                 'type="range"', 'data-testid="clue"', 'data-testid="no-guess"', 'data-testid="submit"'):
        assert hook in page, hook
    for button in ("play", "no-guess", "submit"):
        assert re.search(rf'<button[^>]*data-testid="{button}"[^>]*\bdisabled\b', page), button
    assert 'data-testid="reveal"' not in page
    # no inline script or style: the CSP would block them
    assert not re.search(r"<script(?![^>]*\bsrc=)", page) and "style=" not in page and "<style" not in page
    assert walker.item() == (first, "1 of 3")  # a reload: the same item
    assert walker.guess(first).json() == {"stored": True, "created": True, "stage": "items"}
    second, progress = walker.item()
    assert second != first and progress == "2 of 3"
    walker.consent()  # consenting again changes nothing
    assert walker.item() == (second, "2 of 3")
    walker.guess(second, refused=True, latitude=None, longitude=None)
    third, _ = walker.item()
    walker.guess(third)
    end = walker.page().text
    assert 'data-testid="completion-code">DONE-1<' in end and 'data-testid="summary"' in end
    assert "n = 2" in end  # her mean error counts its placed guesses
    assert walker.page().text == end  # a reload of the end stays the end
    with store.read() as connection:
        guesses = connection.execute(G.select()).all()
    assert len(guesses) == 3 and sum(g.refused for g in guesses) == 1
    store.dispose()


def test_a_double_submit_stores_one_guess(project: Path, template: Path) -> None:
    store, _ = new_study(project, "s1", per_participant=2, headphone_check="off")
    walker = invited(store, "s1", app_for(store, "s1", template / "cache"))
    walker.consent()
    item, _ = walker.item()
    first = walker.guess(item)
    again = walker.guess(item, latitude=-10.0)
    assert first.json()["created"] is True and again.status_code == 200 and again.json()["created"] is False
    assert count(store, G) == 1
    with store.read() as connection:
        assert connection.execute(G.select()).first().latitude == 48.0
    store.dispose()


def test_a_screened_out_participant_is_told_politely_and_can_answer_nothing(project: Path, template: Path) -> None:
    store, _ = new_study(project, "s1", per_participant=2, headphone_check="screen")
    walker = invited(store, "s1", app_for(store, "s1", template / "cache"))
    walker.consent()
    assert walker.headphones(right=False).json() == {"stage": "screened_out"}
    page = walker.page()
    assert page.status_code == 200 and "Thank you" in page.text and "data-item-id" not in page.text
    assert walker.headphones().status_code == 200  # the first answers count: still screened out
    assert "data-item-id" not in walker.page().text
    store.dispose()


def test_the_practice_clip_comes_first_and_says_so(project: Path, template: Path) -> None:
    store, _ = new_study(project, "s1", per_participant=2, headphone_check="off", practice=_keys_of(project)[0])
    walker = invited(store, "s1", app_for(store, "s1", template / "cache"))
    walker.consent()
    item, progress = walker.item()
    assert progress == "Practice clip (not scored)"
    walker.guess(item)
    assert walker.item()[1] == "1 of 2"
    store.dispose()


def _keys_of(db: Path) -> list[str]:
    from storage import open_store

    store = open_store(db)
    try:
        return sorted(_keys(store))
    finally:
        store.dispose()


def test_a_completion_url_alone_sends_her_to_the_panel(project: Path, template: Path) -> None:
    store, _ = new_study(project, "s1", per_participant=1, headphone_check="off",
                         completion_url="https://panel.example/done?cc=ABC")
    walker = invited(store, "s1", app_for(store, "s1", template / "cache"))
    walker.consent()
    walker.guess(walker.item()[0])
    end = walker.client.get("/", follow_redirects=False)
    assert end.status_code == 303 and end.headers["location"] == "https://panel.example/done?cc=ABC"
    assert end.headers["referrer-policy"] == "no-referrer"
    store.dispose()


def test_study_mode_never_reveals(project: Path, template: Path) -> None:
    store, _ = new_study(project, "s1", per_participant=1, headphone_check="off")
    walker = invited(store, "s1", app_for(store, "s1", template / "cache"))
    walker.consent()
    item, _ = walker.item()
    assert walker.get(f"/api/reveal/{item}").status_code == 409
    stored = walker.guess(item)
    assert "reveal" not in stored.json()
    assert walker.get(f"/api/reveal/{item}").status_code == 409
    assert walker.get(f"/reveal/{item}").status_code == 404
    store.dispose()


def test_game_mode_reveals_only_after_the_guess_is_stored(project: Path, template: Path) -> None:
    store, _ = new_study(project, "g1", mode="game", per_participant=2, headphone_check="off")
    walker = invited(store, "g1", app_for(store, "g1", template / "cache"))
    walker.consent()
    item, _ = walker.item()
    before = walker.get(f"/api/reveal/{item}")
    assert before.status_code == 409 and "latitude" not in before.text
    assert walker.guess(item, latitude=91).status_code == 400  # not stored: nothing revealed
    assert walker.get(f"/api/reveal/{item}").status_code == 409
    early = walker.client.get(f"/reveal/{item}", follow_redirects=False)
    assert early.status_code == 303 and early.headers["location"] == "/"
    stored = walker.guess(item).json()
    reveal = stored["reveal"]
    assert reveal["place"] and reveal["error"].endswith("km") and reveal["models"]
    assert reveal["models"][0]["model"].startswith("DEMO-ALM") and reveal["score"]["n"] == "1"
    assert reveal["guess"] == [48.0, 2.0]  # the line from her guess to the place
    # a reload fetches the same reveal, her guess's line included (before: no guess after a reload)
    assert walker.get(f"/api/reveal/{item}").json() == reveal
    # the reveal has its own address: a reload there shows it again (the page fetches it)
    again = walker.get(f"/reveal/{item}")
    assert again.status_code == 200 and f'data-item-id="{item}"' in again.text and 'data-revealed="1"' in again.text
    assert walker.get("/reveal/not-hers").status_code == 404
    store.dispose()


def _walk(walker, store, *, guesses: int):  # type: ignore[no-untyped-def]
    """Consent, check, then each item: page, audio, guess. Returns what came back before each stored
    guess, and the answers to the stored guesses with the end page."""
    blind: list[tuple[str, bytes]] = []
    after: list[tuple[str, bytes]] = []
    walker.consent()
    walker.headphones()
    for _ in range(guesses):
        item, _ = walker.item()
        walker.listen(item)
        walker.get("/static/item.js")
        walker.get("/static/map.js")
        walker.guess(item, latitude=200)  # a refused submit sends nothing about the clip either
        blind.extend(walker.received)
        walker.received.clear()
        walker.guess(item)
        walker.guess(item)  # the double submit's answer too
        after.extend(walker.received)
        walker.received.clear()
    walker.page()
    return blind, after + walker.received


@pytest.mark.parametrize("mode", ["study", "game"])
def test_no_hidden_value_of_any_clip_reaches_the_participant(project: Path, template: Path, mode: str) -> None:
    store, _ = new_study(project, "s1", mode=mode, per_participant=4, headphone_check="record", consent=CONSENT,
                         completion_code="DONE-1")
    hidden = hidden_values(store, _keys(store), media_files(template))
    # The demo's titles describe the sound, not the place ("a source circling the listener"): their
    # single words are ordinary words of any page ("resource", "addEventListener"). The whole
    # titles stay in the census; the browser walk on the real AGL1K recordings keeps every word.
    hidden = {value: what for value, what in hidden.items() if not what.endswith("title (word)")}
    assert len(hidden) > 20 and any("latitude" in what for what in hidden.values())
    app = app_for(store, "s1", template / "cache")
    walker = invited(store, "s1", app)
    entry = list(walker.received)
    blind, after = _walk(walker, store, guesses=4)  # study mode: the submit answers and the end page too
    searched = entry + blind + (after if mode == "study" else [])
    assert sum(len(data) for _, data in searched) > 100_000  # the audio is in it
    leaks = [f"{what}: {found}" for what, data in searched for found in find_hidden(data, hidden)]
    assert leaks == [], "\n".join(leaks[:20])
    if mode == "game":  # the census can fail: the reveal names the place
        revealed = [found for what, data in after for found in find_hidden(data, hidden)]
        assert revealed
    assert count(store, G) == 4
    store.dispose()


def test_the_first_clip_page_with_its_map_weighs_under_400_kb(project: Path, template: Path) -> None:
    """design/web-study.md, Targets: the first page load, map included, at most 400 kB (before the audio)."""
    store, _ = new_study(project, "s1", per_participant=1, headphone_check="off")
    walker = invited(store, "s1", app_for(store, "s1", template / "cache"))
    walker.consent()
    page = walker.page()
    assert 'class="land" d="M' in page.text  # the coastlines are in it
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)
    assert {"/static/map.js", "/static/item.js", "/static/study.css"} <= set(assets)
    total = len(page.content) + sum(len(walker.client.get(path).content) for path in assets)
    assert total <= 400_000, f"{total:,} bytes"
    store.dispose()


def test_a_worker_builds_its_app_from_the_environment(project: Path, template: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`aglw serve --workers N`: each uvicorn worker makes the same app from what serve put in the environment."""
    from web.server import app_from_environment

    store, _ = new_study(project, "s1", per_participant=1, headphone_check="off")
    for name, value in {"AGLW_WEB_DB": str(project), "AGLW_WEB_STUDY": "s1",
                        "AGLW_WEB_CACHE": str(template / "cache"), "AGLW_WEB_SECURE_COOKIES": "1"}.items():
        monkeypatch.setenv(name, value)
    walker = invited(store, "s1", app_from_environment())
    header = next(data.decode() for what, data in walker.received if what.startswith("headers of GET /i/"))
    assert "; secure" in header.lower()
    store.dispose()
