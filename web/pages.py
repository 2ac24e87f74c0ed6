"""The study page's documents: Jinja2 templates (autoescape on), the consent text, the reveal's words.

What a page may show comes from :mod:`workbench.studies.web_session` (a :class:`State`, a
:class:`Reveal`, a summary); this module only lays it out. Text from data (the consent, a
clip's place name, a model's name) reaches the document through the template engine's escaping
or through JSON that the script writes with ``textContent``, never as markup.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from storage import Store
from web import tokens
from web.map_svg import coast_path, land_path
from workbench import formatting
from workbench.studies import web_session
from workbench.studies.web_study import HEADPHONE_TRIALS, StudyConfig

HERE = Path(__file__).parent
DEFAULT_CONSENT = ("You will hear short recordings and guess, on a world map, where each was made. "
                   "Your answers are stored under a pseudonym and used for research only. "
                   "You may stop at any time.")
NO_STORE = {"cache-control": "no-store"}


def consent_blocks(text: str) -> list[dict[str, Any]]:
    """The study's Markdown consent as plain blocks: paragraphs and bullet lists of spans.

    Only ``**bold**`` and ``*emphasis*`` are kept as marks; everything else, HTML included, is
    text (the template escapes every span).
    """
    blocks: list[dict[str, Any]] = []
    for chunk in re.split(r"\n\s*\n", (text or "").strip()):
        lines = [line.strip() for line in chunk.splitlines() if line.strip()]
        if not lines:
            continue
        if all(re.match(r"^[-*+]\s+", line) for line in lines):
            blocks.append({"kind": "list", "items": [_spans(re.sub(r"^[-*+]\s+", "", line)) for line in lines]})
        else:
            heading = re.match(r"^#{1,6}\s+", lines[0])
            text_of = " ".join(lines)
            blocks.append({"kind": "heading" if heading and len(lines) == 1 else "paragraph",
                           "spans": _spans(re.sub(r"^#{1,6}\s+", "", text_of))})
    return blocks


def _spans(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for part in re.split(r"(\*\*[^*]+\*\*|\*[^*]+\*)", text):
        if not part:
            continue
        if part.startswith("**") and part.endswith("**") and len(part) > 4:
            out.append(("strong", part[2:-2]))
        elif part.startswith("*") and part.endswith("*") and len(part) > 2:
            out.append(("em", part[1:-1]))
        else:
            out.append(("text", part))
    return out


def _error_km(value: float | None) -> str:
    return formatting.km(value, missing="no position")


def reveal_payload(shown: web_session.Reveal) -> dict[str, Any]:
    """Game mode's reveal as JSON for the page (numbers formatted here, by the one formatting owner)."""
    beats = shown.score.get("beats", {})
    return {
        "place": shown.place,
        "latitude": shown.latitude,
        "longitude": shown.longitude,
        "guess": None if shown.guess is None else list(shown.guess),  # as stored: the same after a reload
        "refused": shown.refused,
        "error": "no guess (I can't tell)" if shown.refused else _error_km(shown.error_km),
        "models": [{"model": m["model"], "latitude": m["latitude"], "longitude": m["longitude"],
                    "error": "refused" if m["refused"] else _error_km(m["error_km"])} for m in shown.models],
        "score": {
            "mean_error": _error_km(shown.score.get("mean_error_km")),
            "n": formatting.count(shown.score.get("n")),
            "beats": [{"model": model, "wins": formatting.count(t["wins"]), "n": formatting.count(t["n"])}
                      for model, t in beats.items()],
        },
    }


class Renderer:
    """The study's templates and the page each participant stage shows."""

    def __init__(self, study: StudyConfig) -> None:
        self.study = study
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"),
                               autoescape=select_autoescape(default=True, default_for_string=True))

    def page(self, request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(name).render(study_mode=self.study.mode, **context)
        return HTMLResponse(html, status_code=status_code, headers=NO_STORE)

    def error(self, request: Request, status: int, sentence: str) -> Response:
        """An error as one sentence: JSON for the script's requests, a templated page otherwise."""
        wants_json = request.url.path.startswith("/api/") or "application/json" in request.headers.get("accept", "")
        if wants_json:
            return JSONResponse({"error": sentence, "status": status}, status_code=status, headers=NO_STORE)
        return self.page(request, "error.html", status_code=status, status=status, sentence=sentence)

    def stage(self, request: Request, state: web_session.State, participant_id: int, store: Store,
              listening: dict[str, Any] | None = None) -> Response:
        csrf = tokens.csrf_token(self.study, participant_id)
        if state.stage == "consent":
            return self.page(request, "consent.html", csrf=csrf,
                             blocks=consent_blocks(self.study.consent or DEFAULT_CONSENT))
        if state.stage == "questionnaire" and self.study.questionnaire:
            from workbench.studies.questionnaire import form_questions

            return self.page(request, "questionnaire.html", csrf=csrf, title=self.study.questionnaire["title"],
                             intro=self.study.questionnaire.get("intro") or "",
                             questions=form_questions(self.study.questionnaire))
        if state.stage == "headphones":
            return self.page(request, "headphones.html", csrf=csrf, trials=HEADPHONE_TRIALS)
        if state.stage == "screened_out":
            return self.page(request, "screened_out.html")
        if state.stage == "items" and state.item is not None:
            item = state.item
            progress = ("Practice clip (not scored)" if item.kind == "practice"
                        else f"{item.position} of {item.total}")
            return self.page(request, "item.html", csrf=csrf, item=item, progress=progress, land=land_path(),
                             coast=coast_path(), **self.listening_context(listening))
        return self.end(request, participant_id, store)

    def listening_context(self, record: dict[str, Any] | None) -> dict[str, Any]:
        """What listening.js needs: her stored record (to continue it), the must-hear minimum, the recognise item."""
        options = self.study.options
        kept = {k: (record or {}).get(k) for k in ("spans", "plays", "seeks", "played_s")}
        return {"listening_json": json.dumps(kept, separators=(",", ":")),
                "must_hear_s": options.get("must_hear_s"), "must_hear_share": options.get("must_hear_share"),
                "recognise": bool(options.get("recognise"))}

    def revealed(self, request: Request, state: web_session.State, participant_id: int, item_id: str) -> Response:
        """Game mode's clip page after her stored guess (its script fetches the reveal and shows it)."""
        # answers are stored in her order, so the item just answered is the last one done
        progress = f"{state.done} of {state.total}" if state.done else "Practice clip (not scored)"
        item = web_session.Item(item_id=item_id, position=state.done, total=state.total, kind="item", answered=True)
        return self.page(request, "item.html", csrf=tokens.csrf_token(self.study, participant_id), item=item,
                         progress=progress, land=land_path(), coast=coast_path(), revealed=True)

    def end(self, request: Request, participant_id: int, store: Store) -> Response:
        """The end: straight back to the panel, or the completion code with her own summary."""
        if self.study.completion_url and not self.study.completion_code:
            # the panel's own page records the completion
            return RedirectResponse(self.study.completion_url, status_code=303, headers=NO_STORE)
        result = web_session.summary(store, self.study, participant_id)
        summary = None
        if result["n_guesses"]:
            summary = {"n": formatting.count(result["n_placed"]), "n_guesses": formatting.count(result["n_guesses"]),
                       "mean_error": _error_km(result["mean_error_km"]),
                       "within": formatting.accuracy(result["share_within_1000km"], missing="–")}
        return self.page(request, "done.html", code=self.study.completion_code, url=self.study.completion_url,
                         summary=summary)
