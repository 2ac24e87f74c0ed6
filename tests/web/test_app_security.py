"""The study page's security rules, server side (design/web-study.md "Security"): headers on every
response, signed links and cookies, CSRF and Origin, body size, validation, rate limits, nothing listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage import tables as T
from tests.web.server_walk import (BASE, CONSENT, TestClient, app_for, count, demo_copy, invited, new_study,
                                   participants_started)

G = T.web_guess


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo-template")


@pytest.fixture
def study(template: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    db = demo_copy(template, tmp_path)
    store, config = new_study(db, "s1", per_participant=2, headphone_check="record", consent=CONSENT,
                              completion_code="DONE-1")
    yield store, config, template / "cache"
    store.dispose()


def _ready_walker(store, cache: Path, **options):  # type: ignore[no-untyped-def]
    app = app_for(store, "s1", cache, **options)
    walker = invited(store, "s1", app)
    assert walker.consent().status_code == 303
    assert walker.headphones().status_code == 200
    return app, walker


HEADERS = {
    "content-security-policy": lambda v: v.split(";")[0].strip() == "default-src 'self'" and "frame-ancestors 'none'" in v
    and "unsafe" not in v and "*" not in v and "http" not in v,
    "x-content-type-options": lambda v: v == "nosniff",
    "referrer-policy": lambda v: v == "no-referrer",
}


def _secure(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [name for name, ok in HEADERS.items() if not ok(response.headers.get(name, ""))]


def test_every_response_carries_the_security_headers_errors_included(study, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    store, config, cache = study
    app, walker = _ready_walker(store, cache)
    item, _ = walker.item()
    client = walker.client
    responses = {
        "page": client.get("/"),
        "static js": client.get("/static/item.js"),
        "static css": client.get("/static/study.css"),
        "audio range": client.get(f"/audio/{item}", headers={"range": "bytes=0-99"}),
        "mp3 range": client.get(f"/audio/{item}/mp3", headers={"range": "bytes=0-99"}),
        "404": client.get("/no/such/page"),
        "405": client.get("/api/submit"),
        "403 tampered": TestClient(app, base_url=BASE).get("/i/abc.def.ghi"),
        "400": walker.post_json("/api/submit", {"item_id": item, "latitude": 91, "longitude": 0}),
        "413": client.post("/api/submit", content=b"{" + b" " * 20_000 + b"}",
                           headers={"content-type": "application/json", "x-csrf-token": walker.csrf}),
        "favicon": client.get("/favicon.ico"),
    }
    from workbench.studies import web_session

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(web_session, "state", broken)
    responses["500"] = TestClient(app, base_url=BASE, raise_server_exceptions=False,
                                  cookies=dict(client.cookies)).get("/")
    assert responses["500"].status_code == 500 and "disk on fire" not in responses["500"].text
    assert responses["audio range"].status_code == 206 and responses["mp3 range"].status_code == 206
    assert responses["413"].status_code == 413
    assert responses["404"].status_code == 404 and responses["405"].status_code == 405
    missing = {what: _secure(r) for what, r in responses.items() if _secure(r)}
    assert missing == {}
    assert "server" not in {k.lower() for k in responses["page"].headers}


def test_the_audio_names_nothing_and_serves_ranges(study) -> None:  # type: ignore[no-untyped-def]
    store, config, cache = study
    _, walker = _ready_walker(store, cache)
    item, _ = walker.item()
    part = walker.client.get(f"/audio/{item}", headers={"range": "bytes=0-99"})
    assert part.status_code == 206 and len(part.content) == 100 and part.headers["content-range"].startswith("bytes 0-99/")
    whole = walker.client.get(f"/audio/{item}")
    assert whole.status_code == 200 and whole.content[:100] == part.content
    assert "content-disposition" not in whole.headers
    assert walker.client.get("/audio/not-an-item").status_code == 404
    # the MP3 fallback for browsers without Ogg (Safari): the same recording, the same rules
    assert whole.headers["content-type"] == "audio/ogg"
    mp3 = walker.client.get(f"/audio/{item}/mp3", headers={"range": "bytes=0-99"})
    assert mp3.status_code == 206 and mp3.headers["content-type"] == "audio/mpeg"
    assert "content-disposition" not in mp3.headers
    assert walker.client.get(f"/audio/{item}/wav").status_code == 404
    assert walker.client.get("/audio/not-an-item/mp3").status_code == 404
    # the page offers both, Ogg first: a browser takes the first it can play
    page = walker.page().text
    assert page.index(f'src="/audio/{item}" type="audio/ogg') < page.index(f'src="/audio/{item}/mp3" type="audio/mpeg"')
    # another participant's item is not hers
    other = invited(store, "s1", app_for(store, "s1", cache))
    assert other.client.get(f"/audio/{item}").status_code in (403, 404)
    assert other.client.get(f"/audio/{item}/mp3").status_code in (403, 404)


def test_a_tampered_or_expired_link_is_refused_and_changes_nothing(study, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from web import tokens
    from workbench.studies import web_study

    store, config, cache = study
    app = app_for(store, "s1", cache)
    config, (nonce,) = web_study.invite(store, "s1", 1)
    link = tokens.invite_link(BASE, config, nonce).removeprefix(BASE)
    head, _, token = link.rpartition("/")
    payload, stamp, signature = token.split(".")
    forged = [f"{head}/{payload}.{stamp}.{signature[:-2]}AA", f"{head}/{payload[:-1]}x.{stamp}.{signature}",
              "/i/", "/i/" + "A" * 600, "/o/" + token, f"{head}/{tokens.open_token(config)}"]
    client = TestClient(app, base_url=BASE)
    for url in forged:
        response = client.get(url)
        assert response.status_code in (403, 404), url
        assert "aglw_session" not in response.cookies
    assert participants_started(store) == 0
    monkeypatch.setattr(tokens, "INVITE_MAX_AGE_S", -1)  # every token is too old now
    assert client.get(link).status_code == 403
    assert participants_started(store) == 0
    monkeypatch.undo()
    assert client.get(link).status_code == 200
    assert participants_started(store) == 1
    # a forged or foreign session cookie is no session
    for cookie in ("x", client.cookies["aglw_session"] + "x", tokens.session_cookie(
            web_study.StudyConfig(**{**config.__dict__, "secret": "0" * 64}), 1)):
        assert TestClient(app, base_url=BASE, cookies={"aglw_session": cookie}).get("/").status_code == 403


def test_the_open_link_takes_the_panel_id_and_refuses_tampering(study) -> None:  # type: ignore[no-untyped-def]
    from web import tokens

    store, config, cache = study
    app = app_for(store, "s1", cache)
    link = tokens.open_link(BASE, config).removeprefix(BASE)
    client = TestClient(app, base_url=BASE)
    assert client.get(link[:-2] + "zz", params={"PROLIFIC_PID": "abc"}).status_code == 403
    assert client.get(link).status_code == 400  # no PROLIFIC_PID: one sentence, no participant
    assert participants_started(store) == 0
    params = {"PROLIFIC_PID": "5f1a2b", "STUDY_ID": "st", "SESSION_ID": "se"}
    first = client.get(link, params=params)
    assert first.status_code == 200 and 'http-equiv="refresh"' in first.text
    again = TestClient(app, base_url=BASE).get(link, params=params)
    assert again.status_code == 200
    assert participants_started(store) == 1  # the same panel id is the same participant
    with store.read() as connection:
        stored = connection.execute(T.web_participant.select()).first()
    assert "5f1a2b" not in repr(tuple(stored))


def test_the_session_cookie_is_httponly_strict_and_secure_when_asked(study) -> None:  # type: ignore[no-untyped-def]
    store, config, cache = study
    plain = invited(store, "s1", app_for(store, "s1", cache))
    cookie = plain.received[3][1].decode()
    header = next(data.decode() for what, data in plain.received if what.startswith("headers of GET /i/"))
    set_cookie = next(line for line in header.splitlines() if line.startswith("set-cookie"))
    assert "httponly" in set_cookie.lower() and "samesite=strict" in set_cookie.lower()
    assert "secure" not in set_cookie.lower().replace("samesite", "") and "aglw_session" in cookie
    for options, base in (({"secure_cookies": True}, BASE), ({"proxy_headers": True}, "https://study.example")):
        walker = invited(store, "s1", app_for(store, "s1", cache, **options), base_url=base)
        header = next(data.decode() for what, data in walker.received if what.startswith("headers of GET /i/"))
        assert "; secure" in header.lower()
    # proxy headers not asked for: an https request alone does not make the cookie Secure (uvicorn
    # rewrites the scheme only with --proxy-headers; here the scheme is taken as given)


def test_csrf_and_origin_guard_every_change_and_store_nothing(study) -> None:  # type: ignore[no-untyped-def]
    store, config, cache = study
    app = app_for(store, "s1", cache)
    walker = invited(store, "s1", app)
    walker.page()
    # consent without or with a wrong token
    for data in ({}, {"csrf": "0" * 64}):
        assert walker.client.post("/consent", data=data, follow_redirects=False).status_code == 403
    assert count(store, T.web_assignment) == 0
    assert walker.client.post("/consent", data={"csrf": walker.csrf}, follow_redirects=False,
                              headers={"origin": "https://evil.example"}).status_code == 403
    assert count(store, T.web_assignment) == 0
    assert walker.consent().status_code == 303
    assert walker.post_json("/api/headphones", {"answers": [1] * 6}, csrf="").status_code == 403
    assert walker.headphones().status_code == 200
    item, _ = walker.item()
    for csrf, headers in (("", {}), ("nope", {}), (walker.csrf, {"origin": "http://evil.example"}),
                          (walker.csrf, {"origin": "null"})):
        response = walker.post_json("/api/submit", {"item_id": item, "latitude": 1, "longitude": 2}, csrf=csrf,
                                    headers=headers)
        assert response.status_code == 403, (csrf, headers)
    # another participant's token is not hers
    other = invited(store, "s1", app)
    other.page()
    assert walker.post_json("/api/submit", {"item_id": item, "latitude": 1, "longitude": 2},
                            csrf=other.csrf).status_code == 403
    assert count(store, G) == 0
    same_site = walker.post_json("/api/submit", {"item_id": item, "latitude": 1, "longitude": 2},
                                 headers={"origin": BASE})
    assert same_site.status_code == 200 and count(store, G) == 1


@pytest.mark.parametrize("fields, words", [
    ({"latitude": 91}, "latitude"), ({"latitude": -90.5}, "latitude"), ({"longitude": 181}, "longitude"),
    ({"latitude": "NaN"}, "latitude"), ({"longitude": "1e999"}, "longitude"), ({"latitude": None}, "latitude"),
    ({"latitude": True}, "latitude"), ({"confidence": 1.5}, "confidence"), ({"confidence": -0.1}, "confidence"),
    ({"confidence": "high"}, "confidence"), ({"clue": "x" * 501}, "clue"), ({"clue": "a\x00b"}, "clue"),
    ({"clue": ["list"]}, "clue"), ({"item_id": None}, "item"), ({"item_id": "x" * 65}, "item"),
])
def test_invalid_answers_get_400_with_one_sentence_and_store_nothing(study, fields, words) -> None:  # type: ignore[no-untyped-def]
    store, config, cache = study
    _, walker = _ready_walker(store, cache)
    item, _ = walker.item()
    response = walker.guess(item, **fields)
    assert response.status_code == 400, response.text
    sentence = response.json()["error"]
    assert words in sentence and "\n" not in sentence and len(sentence) < 200
    assert count(store, G) == 0


def test_malformed_bodies_and_large_bodies_are_refused(study) -> None:  # type: ignore[no-untyped-def]
    store, config, cache = study
    _, walker = _ready_walker(store, cache)
    item, _ = walker.item()
    headers = {"x-csrf-token": walker.csrf, "content-type": "application/json"}
    for body, status in ((b"not json", 400), (b"[1, 2]", 400), (b'{"item_id": 1}', 400),
                         (b"{" + b" " * 17_000 + b"}", 413)):
        assert walker.client.post("/api/submit", content=body, headers=headers).status_code == status, body[:20]

    def chunks():  # type: ignore[no-untyped-def]
        for _ in range(40):
            yield b" " * 1000  # no Content-Length: counted while read

    chunked = walker.client.post("/api/submit", content=chunks(), headers=headers)
    assert chunked.status_code == 413
    assert walker.client.post("/api/submit", data={"item_id": item}, headers={"x-csrf-token": walker.csrf}
                              ).status_code == 400
    assert count(store, G) == 0


def test_rate_limits_answer_429(study) -> None:  # type: ignore[no-untyped-def]
    store, config, cache = study
    app, walker = _ready_walker(store, cache, participant_rate=0.001, participant_burst=3)
    item, _ = walker.item()
    statuses = [walker.guess(item).status_code for _ in range(5)]
    assert statuses[:1] == [200] and 429 in statuses
    assert count(store, G) == 1
    flood = app_for(store, "s1", cache, address_rate=0.001, address_burst=5)
    client = TestClient(flood, base_url=BASE)
    assert [client.get("/").status_code for _ in range(7)][-1] == 429
    # a local proxy that passes no addresses on (no --proxy-headers): all participants would share
    # one bucket, so the address limit leaves loopback alone; with --proxy-headers it applies
    local = TestClient(flood, base_url=BASE, client=("127.0.0.1", 50000))
    assert {local.get("/").status_code for _ in range(7)} == {403}
    proxied = TestClient(app_for(store, "s1", cache, address_rate=0.001, address_burst=5, proxy_headers=True),
                         base_url=BASE, client=("127.0.0.1", 50000))
    assert [proxied.get("/").status_code for _ in range(7)][-1] == 429


def test_no_endpoint_lists_clips_or_participants(study) -> None:  # type: ignore[no-untyped-def]
    store, config, cache = study
    _, walker = _ready_walker(store, cache)
    for path in ("/api", "/api/", "/api/clips", "/api/items", "/api/participants", "/api/study", "/admin",
                 "/static", "/static/", "/audio", "/audio/", "/hp", "/hp/", "/clips", "/participants",
                 "/docs", "/openapi.json", "/api/reveal", "/api/reveal/"):
        response = walker.client.get(path)
        assert response.status_code in (404, 405), path
    for trial in (0, 7):
        assert walker.client.get(f"/hp/{trial}.wav").status_code == 404
    assert TestClient(app_for(store, "s1", cache), base_url=BASE).get("/hp/1.wav").status_code == 403


def test_error_pages_escape_what_they_show(study) -> None:  # type: ignore[no-untyped-def]
    store, config, cache = study
    _, walker = _ready_walker(store, cache)
    item, _ = walker.item()
    response = walker.client.get("/audio/%3Cscript%3Ealert(1)%3C%2Fscript%3E")
    assert response.status_code == 404 and "<script>alert" not in response.text
    response = walker.guess(item, clue="<b>" + "x" * 600)
    assert response.status_code == 400 and "<b>" not in response.text
