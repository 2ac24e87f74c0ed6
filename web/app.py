"""The study page's ASGI app for one web study (design/web-study.md): routes, guards, error pages.

Every decision about what a participant may see is made by :mod:`workbench.studies.web_session`;
this module only turns its answers into pages and JSON. State lives in the store and in the signed
session cookie, never in this process, so a reload shows what the store says and any worker serves
any participant. Routes run as plain functions (Starlette puts them on its thread pool: the store's
calls block).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from storage import Store
from web import pages, tokens
from web.security import BodyLimit, BodyTooLarge, RateLimiter, SecurityHeaders, same_origin
from workbench.errors import InputError
from workbench.studies import listening, web_session
from workbench.studies.web_study import HEADPHONE_TRIALS, StudyConfig, load_study

HERE = Path(__file__).parent
CSRF_HEADER = "x-csrf-token"
HEADPHONE_RATE = 16_000  # Hz of the headphone check's tones (200 Hz)
# Per address: a page, its audio ranges and a submit are a handful of requests per clip, so a
# person never comes near it, while a script hammering the server does. Per participant: submits
# and headphone answers. In-process buckets: with --workers N each worker counts on its own.
ADDRESS_RATE, ADDRESS_BURST = 20.0, 200.0
PARTICIPANT_RATE, PARTICIPANT_BURST = 2.0, 20.0
# listening records: a post every 5 s of play and on each pause or seek (the page sends at most one a second)
LISTENING_RATE, LISTENING_BURST = 2.0, 30.0
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


class Guard:
    """What every route asks: who is this (signed cookie), may they (rate, origin, CSRF)."""

    def __init__(self, study: StudyConfig, *, address_rate: float, address_burst: float,
                 participant_rate: float, participant_burst: float, proxy_headers: bool = False) -> None:
        self.study = study
        self.proxy_headers = proxy_headers
        self.by_address = RateLimiter(address_rate, address_burst)
        self.by_participant = RateLimiter(participant_rate, participant_burst)
        # their own bucket: a participant who scrubs through a clip must not use up her submits'
        self.by_listening = RateLimiter(LISTENING_RATE, LISTENING_BURST)

    def address(self, request: Request) -> None:
        host = request.client.host if request.client else "unknown"
        if not self.proxy_headers and host in LOOPBACK:
            # a proxy on this machine that does not pass the participants' addresses on: they would
            # all share one bucket, so only the per-participant limits apply (README: --proxy-headers)
            return
        if not self.by_address.allow(host):
            raise HTTPException(429, "Too many requests from this address; wait a minute and reload.")

    def participant(self, request: Request, *, changes: bool = False, form_token: str | None = None,
                    bucket: RateLimiter | None = None) -> int:
        """Her participant id from the signed cookie; for a state-changing request also origin and CSRF."""
        self.address(request)
        value = request.cookies.get(tokens.COOKIE_NAME, "")
        try:
            participant_id = tokens.read_session(self.study, value)
        except tokens.BadToken:
            raise HTTPException(403, "This page needs your invitation link; open the link you were given.") from None
        if changes:
            if not same_origin(request.headers):
                raise HTTPException(403, "This request came from another site and was refused.")
            token = request.headers.get(CSRF_HEADER) or form_token
            if not tokens.check_csrf(self.study, participant_id, token):
                raise HTTPException(403, "This request carries no valid form token; reload the page and try again.")
            if not (bucket or self.by_participant).allow(str(participant_id)):
                raise HTTPException(429, "Too many answers at once; wait a moment and try again.")
        return participant_id


def create_app(
    store: Store,
    study_name: str,
    *,
    cache_dir: Path,
    secure_cookies: bool = False,
    proxy_headers: bool = False,
    max_body: int = 16 * 1024,
    address_rate: float = ADDRESS_RATE,
    address_burst: float = ADDRESS_BURST,
    participant_rate: float = PARTICIPANT_RATE,
    participant_burst: float = PARTICIPANT_BURST,
) -> Any:
    """The ASGI app serving the web study ``study_name`` of ``store`` (one study per server).

    ``secure_cookies``: mark the session cookie Secure (served over https). ``proxy_headers``: the
    app runs behind a TLS proxy whose X-Forwarded-Proto uvicorn applies; the cookie is then Secure
    whenever the proxy says https.
    """
    study = load_study(store, study_name)
    guard = Guard(study, address_rate=address_rate, address_burst=address_burst,
                  participant_rate=participant_rate, participant_burst=participant_burst, proxy_headers=proxy_headers)
    render = pages.Renderer(study)
    cache_dir = Path(cache_dir)

    def with_session(request: Request, response: Response, participant_id: int) -> Response:
        secure = secure_cookies or (proxy_headers and request.url.scheme == "https")
        response.set_cookie(tokens.COOKIE_NAME, tokens.session_cookie(study, participant_id),
                            max_age=tokens.SESSION_MAX_AGE_S, path="/", secure=secure, httponly=True,
                            samesite="strict")
        return response

    def enter(request: Request, participant_id: int) -> Response:
        # A same-origin 200 page that continues to "/": a SameSite=Strict cookie set on a
        # navigation from another site (the panel) is not sent on a redirect that follows it.
        return with_session(request, render.page(request, "entry.html", status_code=200), participant_id)

    def invitation(request: Request) -> Response:
        guard.address(request)
        try:
            nonce = tokens.read_invite(study, request.path_params["token"])
        except tokens.BadToken:
            raise HTTPException(403, "This link is not valid (altered or expired); ask for a new one.") from None
        try:
            participant_id = web_session.enter_by_invite(store, study, nonce)
        except web_session.NotAllowed:
            raise HTTPException(403, "This link is not valid (altered or expired); ask for a new one.") from None
        return enter(request, participant_id)

    def open_entry(request: Request) -> Response:
        guard.address(request)
        try:
            tokens.read_open(study, request.path_params["token"])
        except tokens.BadToken:
            raise HTTPException(403, "This link is not valid (altered or expired); ask for a new one.") from None
        # the panel's STUDY_ID and SESSION_ID are not needed: the participant is her PROLIFIC_PID
        participant_id = web_session.enter_by_panel(store, study, request.query_params.get("PROLIFIC_PID", ""))
        return enter(request, participant_id)

    def home(request: Request) -> Response:
        participant_id = guard.participant(request)
        state = web_session.state(store, study, participant_id)
        heard = None
        if state.stage == "items" and state.item is not None:
            # the server's clock starts the time to answer, once; the page continues the stored record
            heard = listening.mark_shown(store, study, participant_id, state.item.item_id)
        return render.stage(request, state, participant_id, store, listening=heard)

    async def consent(request: Request) -> Response:
        # a plain form (works before any script runs); its token travels as a form field
        form = parse_qs((await request.body()).decode("utf-8", errors="replace"))
        participant_id = guard.participant(request, changes=True, form_token=(form.get("csrf") or [None])[0])
        from workbench.studies.questionnaire import device_class

        # the user agent reduced to three families here; the string itself is not kept anywhere
        device = device_class(request.headers.get("user-agent"))
        await run_in_threadpool(web_session.consent, store, study, participant_id, device)
        return RedirectResponse("/", status_code=303)

    async def questionnaire(request: Request) -> Response:
        # a plain form like the consent: it works without script
        raw = (await request.body()).decode("utf-8", errors="replace")
        try:
            form = parse_qs(raw, keep_blank_values=True, max_num_fields=500)
        except ValueError:
            raise InputError("the form has too many fields") from None
        participant_id = guard.participant(request, changes=True, form_token=(form.pop("csrf", None) or [None])[0])
        await run_in_threadpool(web_session.record_answers, store, study, participant_id, form)
        return RedirectResponse("/", status_code=303)

    def served_duration(clip_id: int) -> float:
        from workbench.audio.blind_audio import blind_audio_for_clip

        return blind_audio_for_clip(store, clip_id, cache_dir).duration_s

    async def listened(request: Request) -> Response:
        participant_id = guard.participant(request, changes=True, bucket=guard.by_listening)
        body = await _json_body(request)
        item_id = _item_id(body, "the listening record")
        posted = listening.check_record(body)
        clip_id = await run_in_threadpool(item_clip, participant_id, item_id)
        duration = await run_in_threadpool(served_duration, clip_id)
        kept = await run_in_threadpool(listening.record, store, study, participant_id, item_id, posted,
                                       duration_s=duration)
        return JSONResponse({"stored": True, "heard_s": kept["heard_s"], "plays": kept["plays"]},
                            headers={"cache-control": "no-store"})

    def headphone_wav(request: Request) -> Response:
        participant_id = guard.participant(request)
        trial = int(request.path_params["trial"])
        if not 1 <= trial <= HEADPHONE_TRIALS:
            raise HTTPException(404, "There is no such sound.")
        from workbench.audio.headphone_check import trial_wav

        quiet = web_session.headphone_trials(study, participant_id)[trial - 1]
        # 16 kHz: a 200 Hz tone needs no more, and the six sounds weigh 1.3 MB instead of 4.2 MB
        return Response(trial_wav(quiet, sample_rate=HEADPHONE_RATE), media_type="audio/wav",
                        headers={"cache-control": "no-store"})

    async def headphones(request: Request) -> Response:
        participant_id = guard.participant(request, changes=True)
        body = await _json_body(request)
        answers = body.get("answers")
        if not isinstance(answers, list) or not all(isinstance(a, int) and not isinstance(a, bool) for a in answers):
            raise InputError(f"give {HEADPHONE_TRIALS} answers, each 1, 2 or 3")
        state = await run_in_threadpool(web_session.record_headphones, store, study, participant_id, answers)
        return JSONResponse({"stage": state.stage}, headers={"cache-control": "no-store"})

    def item_clip(participant_id: int, item_id: str) -> int:
        try:
            return web_session.item_clip(store, study, participant_id, item_id)
        except web_session.NotAllowed:
            raise HTTPException(404, "There is no such item in your session.") from None

    def audio(request: Request) -> Response:
        participant_id = guard.participant(request)
        clip_id = item_clip(participant_id, request.path_params["item_id"])
        from workbench.audio.blind_audio import FORMATS, OGG, blind_audio_for_clip

        # /audio/<item> is Ogg Vorbis; /audio/<item>/mp3 the fallback for browsers without Ogg (Safari)
        audio_format = FORMATS.get(request.path_params.get("audio_format", OGG.name))
        if audio_format is None:
            raise HTTPException(404, "There is no such recording.")
        blind = blind_audio_for_clip(store, clip_id, cache_dir, audio_format)
        # no file name: the response names nothing (FileResponse adds Content-Disposition only for one)
        response = FileResponse(blind.path, media_type=blind.media_type, headers={"cache-control": "private, no-cache"})
        return response

    async def submit(request: Request) -> Response:
        participant_id = guard.participant(request, changes=True)
        body = await _json_body(request)
        item_id = _item_id(body, "the answer")
        answer = web_session.check_answer(body)
        clip_id = await run_in_threadpool(item_clip, participant_id, item_id)
        must_hear = bool(study.options.get("must_hear_s") or study.options.get("must_hear_share"))
        needs_duration = answer.listening is not None or must_hear
        duration = await run_in_threadpool(served_duration, clip_id) if needs_duration else None
        stored = await run_in_threadpool(web_session.submit, store, study, participant_id, item_id, answer,
                                         duration_s=duration)
        out: dict[str, Any] = {"stored": True, "created": stored.created, "stage": stored.state.stage}
        if study.mode == "game":
            reveal = await run_in_threadpool(web_session.reveal, store, study, participant_id, item_id)
            out["reveal"] = pages.reveal_payload(reveal)
        return JSONResponse(out, headers={"cache-control": "no-store"})

    def reveal(request: Request) -> Response:
        participant_id = guard.participant(request)
        shown = web_session.reveal(store, study, participant_id, request.path_params["item_id"])
        return JSONResponse(pages.reveal_payload(shown), headers={"cache-control": "no-store"})

    def reveal_page(request: Request) -> Response:
        # game mode: the reveal has its own address, so a reload after the guess shows it again
        participant_id = guard.participant(request)
        item_id = request.path_params["item_id"]
        if study.mode != "game":
            raise HTTPException(404, "There is no such page.")
        item_clip(participant_id, item_id)
        try:
            web_session.reveal(store, study, participant_id, item_id)
        except web_session.NotAllowed:
            return RedirectResponse("/", status_code=303)  # not answered yet: the item itself
        state = web_session.state(store, study, participant_id)
        return render.revealed(request, state, participant_id, item_id)

    def favicon(request: Request) -> Response:
        return Response(status_code=204, headers={"cache-control": "public, max-age=86400"})

    routes = [
        Route("/", home),
        Route("/i/{token}", invitation),
        Route("/o/{token}", open_entry),
        Route("/consent", consent, methods=["POST"]),
        Route("/questionnaire", questionnaire, methods=["POST"]),
        Route("/api/listening", listened, methods=["POST"]),
        Route("/hp/{trial:int}.wav", headphone_wav),
        Route("/api/headphones", headphones, methods=["POST"]),
        Route("/audio/{item_id}", audio),
        Route("/audio/{item_id}/{audio_format}", audio),
        Route("/api/submit", submit, methods=["POST"]),
        Route("/api/reveal/{item_id}", reveal),
        Route("/reveal/{item_id}", reveal_page),
        Route("/favicon.ico", favicon),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    handlers: dict[Any, Any] = {
        HTTPException: lambda r, e: render.error(r, e.status_code, e.detail),
        web_session.NotAllowed: lambda r, e: render.error(r, 409, str(e)),
        InputError: lambda r, e: render.error(r, 400, str(e)),
        BodyTooLarge: lambda r, e: render.error(r, 413, "The request is too large."),
        Exception: lambda r, e: render.error(r, 500, "Something went wrong on the server; nothing was lost. "
                                             "Reload the page."),
    }
    app = Starlette(routes=routes, exception_handlers=handlers)
    app.state.study = study
    # the headers wrap everything, Starlette's own 404/500 responses included
    return SecurityHeaders(BodyLimit(app, max_body))


def _item_id(body: dict[str, Any], what: str) -> str:
    item_id = body.get("item_id")
    if not isinstance(item_id, str) or not item_id or len(item_id) > 64:
        raise InputError(f"{what} names no item")
    return item_id


async def _json_body(request: Request) -> dict[str, Any]:
    if not request.headers.get("content-type", "").startswith("application/json"):
        raise InputError("send the answer as JSON")
    raw = await request.body()
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InputError("the request is not valid JSON") from None
    if not isinstance(body, dict):
        raise InputError("the request must be a JSON object")
    return body
