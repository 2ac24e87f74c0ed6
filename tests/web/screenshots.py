"""The study page's screenshots in docs/ (consent, headphone check, clip, reveal, end) at 1280x800 and 390x844.

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python -m tests.web.screenshots [OUT_DIR]`` (Debian's
Chromium through Playwright; the demo project; ``aglw serve`` as a process).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from storage import open_store
from tests.web.browser import Server, chromium, click_map_at

CONSENT = ("## About this study\n\nYou will hear **short field recordings** from around the world. For each one, "
           "click on the map where you think it was recorded, or press *I can't tell*.\n\n"
           "- Your answers are stored under a pseudonym.\n- It takes about 10 minutes.\n- You may stop at any time.")
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}


def _setup(base: Path) -> Path:
    from workbench.demo import create_demo_project
    from workbench.studies import web_study

    db = create_demo_project(base / "demo").db_path
    store = open_store(db)
    try:
        web_study.create_study(store, "crowd-demo", per_participant=2, headphone_check="record", consent=CONSENT,
                               completion_code="C1A2B3")
        web_study.create_study(store, "game-demo", mode="game", per_participant=2, headphone_check="off",
                               consent=CONSENT)
    finally:
        store.dispose()
    return db


def _link(db: Path, study: str, url: str) -> str:
    from web.tokens import invite_link
    from workbench.studies import web_study

    store = open_store(db)
    try:
        config, (nonce,) = web_study.invite(store, study, 1)
        return invite_link(url, config, nonce)
    finally:
        store.dispose()


def _answers(db: Path, study: str) -> list[int]:
    from sqlalchemy import select

    from storage import tables as T
    from workbench.studies import web_session, web_study

    store = open_store(db)
    try:
        config = web_study.load_study(store, study)
        p = T.web_participant.c
        with store.read() as connection:
            pid = connection.execute(select(p.id).where(p.study_id == config.id, p.consented_at.is_not(None))
                                     .order_by(p.consented_at.desc())).scalars().first()
        return web_session.headphone_trials(config, int(pid))
    finally:
        store.dispose()


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        db = _setup(base)
        with chromium() as browser:
            with Server(db, "crowd-demo", base / "cache") as server:
                for size, (w, h) in SIZES.items():
                    link = _link(db, "crowd-demo", server.url)
                    page = browser.new_page(viewport={"width": w, "height": h})
                    page.goto(link)
                    page.get_by_test_id("consent-agree").wait_for()
                    page.screenshot(path=str(out / f"study-page-consent-{size}.png"))
                    page.get_by_test_id("consent-agree").click()
                    page.get_by_test_id("hp-play").wait_for()
                    answers = _answers(db, "crowd-demo")
                    for answer in answers[:2]:
                        page.get_by_test_id("hp-play").click()
                        page.get_by_test_id(f"hp-answer-{answer}").click()
                    page.get_by_test_id("hp-play").click()
                    page.screenshot(path=str(out / f"study-page-headphones-{size}.png"))
                    page.get_by_test_id(f"hp-answer-{answers[2]}").click()
                    for answer in answers[3:]:
                        page.get_by_test_id("hp-play").click()
                        page.get_by_test_id(f"hp-answer-{answer}").click()
                    page.get_by_test_id("progress").wait_for()
                    click_map_at(page, 38.7, -9.1)
                    page.get_by_test_id("confidence").fill("0.65")
                    page.get_by_test_id("clue").fill("Portuguese voices, seagulls")
                    page.screenshot(path=str(out / f"study-page-clip-{size}.png"))
                    for n in (1, 2):
                        if n == 2:
                            page.wait_for_function("() => document.querySelector('[data-testid=progress]')"
                                                   ".innerText.startsWith('2 of')")
                            page.get_by_test_id("no-guess").click()
                        page.get_by_test_id("submit").click()
                    page.get_by_test_id("completion-code").wait_for()
                    page.screenshot(path=str(out / f"study-page-end-{size}.png"))
                    page.close()
            with Server(db, "game-demo", base / "cache") as server:
                for size, (w, h) in SIZES.items():
                    link = _link(db, "game-demo", server.url)
                    page = browser.new_page(viewport={"width": w, "height": h})
                    page.goto(link)
                    page.get_by_test_id("consent-agree").click()
                    page.get_by_test_id("progress").wait_for()
                    click_map_at(page, 40.0, 10.0)
                    page.get_by_test_id("submit").click()
                    page.get_by_test_id("reveal").wait_for()
                    page.screenshot(path=str(out / f"study-page-reveal-{size}.png"), full_page=True)
                    page.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "docs")
