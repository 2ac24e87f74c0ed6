"""The questionnaire page's screenshots in docs/ (the example questionnaire) at 1280x800 and 390x844.

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python -m tests.web.screenshots_questionnaire [OUT_DIR]``
(Debian's Chromium through Playwright; the demo project; ``aglw serve`` as a process). Whole pages:
the form is longer than one screen.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from storage import open_store
from tests.web.browser import Server, chromium
from tests.web.screenshots import CONSENT, SIZES, _link

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "questionnaire-example.toml"


def main(out: Path) -> None:
    from workbench.demo import create_demo_project
    from workbench.studies import web_study
    from workbench.studies.questionnaire import load_questionnaire

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        db = create_demo_project(base / "demo").db_path
        store = open_store(db)
        try:
            web_study.create_study(store, "people-demo", per_participant=2, headphone_check="record",
                                   consent=CONSENT, questionnaire=load_questionnaire(EXAMPLE))
        finally:
            store.dispose()
        with chromium() as browser, Server(db, "people-demo", base / "cache") as server:
            for size, (w, h) in SIZES.items():
                page = browser.new_page(viewport={"width": w, "height": h})
                page.goto(_link(db, "people-demo", server.url))
                page.get_by_test_id("consent-agree").click()
                page.get_by_test_id("questionnaire").wait_for()
                page.select_option("#q-home_country", "FR")
                page.check("input[name=hearing][value=no_known_loss]")
                page.screenshot(path=str(out / f"study-page-questionnaire-{size}.png"), full_page=True)
                page.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "docs")
