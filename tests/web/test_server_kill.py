"""The study page's server killed mid-submit, and two server processes on one PostgreSQL project.

design/web-study.md: "nothing is lost when it is killed"; "a double submit stores one guess"; with
PostgreSQL, several processes serve the same participants (state in the store and in signed
cookies). ``aglw serve`` runs as a process on 127.0.0.1 (port 0), as a researcher runs it.

Kill: participants submit in threads (each item twice at once, a double click) while the server is
killed with SIGKILL at a random moment (seeded; a bounded number of rounds), restarted on the same
project, and the unacknowledged submits sent again. Then: every submit that got a 2xx is stored
exactly once, no item has two guesses, each re-sent one stored at most one, and SQLite's
``PRAGMA integrity_check`` says ok.

Also: a participant still reading a large response when the server has written it all (a slow
link) gets her next request on that connection answered (bench W1 lost requests to uvicorn's 5 s
keep-alive).
"""

from __future__ import annotations

import random
import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import func, select

from storage import open_store
from storage import tables as T
from tests.web.browser import Server

pytestmark = pytest.mark.slow

STUDY = "kill-1"
ROUNDS = 6
PARTICIPANTS = 5
ITEMS = 6


class Sent:
    """Counts submits sent, so a kill lands while submits are in flight (not before, not after)."""

    def __init__(self) -> None:
        self.count = 0
        self.cut = 0  # submits that got no answer: the kill cut them
        self.condition = threading.Condition()

    def add(self) -> None:
        with self.condition:
            self.count += 1
            self.condition.notify_all()

    def wait_for(self, n: int, timeout_s: float = 120.0) -> bool:
        with self.condition:
            return self.condition.wait_for(lambda: self.count >= n, timeout=timeout_s)


SENT = Sent()


@dataclass
class Person:
    """One participant: her own cookie jar (the signed session survives a restart) and what she was told."""

    link: str
    client: object = None
    acked: set[str] = field(default_factory=set)  # item ids whose submit got a 2xx
    unacked: set[str] = field(default_factory=set)  # item ids sent without an answer (connection cut)
    created_on_resend: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # any answer other than 2xx
    csrf: str = ""


def _project(tmp_path: Path, url: str | None = None) -> tuple[str, list[str]]:
    """A synthetic project with the study (headphone check off) and its invitation nonces."""
    from tests.web import synthetic_project
    from workbench.studies import web_study

    db = url or str(tmp_path / "project.sqlite")
    store = open_store(db)
    try:
        synthetic_project.build(store, tmp_path / "data", STUDY, n_clips=ITEMS + 2, per_participant=ITEMS,
                                target_per_clip=PARTICIPANTS, seconds=2.0, headphone_check="off")
        _, nonces = web_study.invite(store, STUDY, PARTICIPANTS)
    finally:
        store.dispose()
    return db, nonces


def _links(db: str, base_url: str, nonces: list[str]) -> list[str]:
    from web.tokens import invite_link
    from workbench.studies import web_study

    store = open_store(db)
    try:
        config = web_study.load_study(store, STUDY)
        return [invite_link(base_url, config, nonce) for nonce in nonces]
    finally:
        store.dispose()


def _enter(person: Person, base: str) -> None:
    import httpx

    # absolute URLs throughout: cookies are not bound to a port, so one jar serves every process
    person.client = httpx.Client(timeout=30.0, follow_redirects=False)
    response = person.client.get(person.link)  # type: ignore[attr-defined]
    assert response.status_code == 200, response.text[:200]
    page = person.client.get(f"{base}/")  # type: ignore[attr-defined]
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    response = person.client.post(f"{base}/consent", content=f"csrf={csrf}", headers={  # type: ignore[attr-defined]
        "content-type": "application/x-www-form-urlencoded", "origin": base})
    assert response.status_code == 303, response.text[:200]


def _item(person: Person, base: str) -> tuple[str, str] | None:
    """Her current item id and form token from the page; None when she is done."""
    page = person.client.get(f"{base}/")  # type: ignore[attr-defined]
    assert page.status_code == 200, page.text[:200]
    found = re.search(r'data-item-id="([^"]+)"', page.text)
    if found is None:
        assert 'data-testid="completion-code"' in page.text, page.text[:300]
        return None
    person.csrf = re.search(r'data-csrf="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    return found.group(1), person.csrf


def _submit(person: Person, base: str, item_id: str, csrf: str) -> bool | None:
    """Send one answer; True/False: acknowledged (created or not), None: no answer (the server died)."""
    import httpx

    SENT.add()
    try:
        response = person.client.post(f"{base}/api/submit", json={  # type: ignore[attr-defined]
            "item_id": item_id, "latitude": 10.0, "longitude": 20.0, "confidence": 0.5},
            headers={"x-csrf-token": csrf, "origin": base, "accept": "application/json"})
    except httpx.HTTPError:
        with SENT.condition:
            SENT.cut += 1
        return None
    if response.status_code // 100 != 2:
        person.errors.append(f"submit {item_id}: HTTP {response.status_code} {response.text[:200]}")
        return None
    return bool(response.json()["created"])


def _double_submit(person: Person, base: str, item_id: str, csrf: str) -> list[bool | None]:
    """The same answer twice at once (a double click)."""
    results: list[bool | None] = []
    threads = [threading.Thread(target=lambda: results.append(_submit(person, base, item_id, csrf)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _work(person: Person, base: str) -> None:
    """Answer her items until done or the server is gone."""
    import httpx

    while True:
        try:
            current = _item(person, base)
        except httpx.HTTPError:
            return
        if current is None:
            return
        item_id, csrf = current
        results = _double_submit(person, base, item_id, csrf)
        if any(r is not None for r in results):
            person.acked.add(item_id)
            person.unacked.discard(item_id)
        else:
            person.unacked.add(item_id)
            return


def _stop(server: Server) -> None:
    """Stop (if still alive) and close its pipes: a killed process leaves them open."""
    server.stop()
    process = server.process
    if process is not None:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _stored(db: str, nonces: list[str]) -> tuple[dict[str, list[str]], int, int]:
    """Per nonce the item ids she has a guess for; the guess rows; the distinct assignments guessed."""
    a, g, p = T.web_assignment.c, T.web_guess.c, T.web_participant.c
    store = open_store(db)
    try:
        with store.read() as connection:
            pairs = connection.execute(select(p.invite_nonce, a.item_id).join(T.web_assignment, a.participant_id == p.id)
                                       .join(T.web_guess, g.assignment_id == a.id)).all()
            rows = connection.execute(select(func.count()).select_from(T.web_guess)).scalar_one()
            distinct = connection.execute(select(func.count(func.distinct(g.assignment_id)))).scalar_one()
    finally:
        store.dispose()
    out: dict[str, list[str]] = {n: [] for n in nonces}
    for nonce, item in pairs:
        out[str(nonce)].append(str(item))
    return out, int(rows), int(distinct)


def _check(db: str, nonces: list[str], people: list[Person]) -> None:
    stored, rows, distinct = _stored(db, nonces)
    assert rows == distinct, f"{rows - distinct} items have two guesses"
    for nonce, person in zip(nonces, people):
        mine = stored[nonce]
        assert len(mine) == len(set(mine))
        lost = person.acked - set(mine)
        assert not lost, f"acknowledged but not stored: {sorted(lost)}"
        for item, created in person.created_on_resend.items():
            assert created <= 1 and mine.count(item) == 1


def _resend(people: list[Person], base: str) -> None:
    """After a restart: each unacknowledged submit again; it stores at most one guess."""
    for person in people:
        for item_id in sorted(person.unacked):
            # her form token is hers, not the item's: the one of her last page (she may be done now)
            created = _submit(person, base, item_id, person.csrf)
            assert created is not None, f"the restarted server did not store {item_id}: {person.errors}"
            person.created_on_resend[item_id] = person.created_on_resend.get(item_id, 0) + int(created)
            person.acked.add(item_id)
        person.unacked.clear()


def test_sigkill_while_submits_are_in_flight_loses_and_doubles_nothing(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn", reason="the [web] extra is not installed")
    db, nonces = _project(tmp_path)
    cache = tmp_path / "cache"
    rng = random.Random(38)
    people: list[Person] = []
    for round_ in range(ROUNDS):
        last = round_ == ROUNDS - 1
        server = Server(db, STUDY, cache).start()  # type: ignore[arg-type]
        try:
            base = server.origin
            if not people:
                people = [Person(link) for link in _links(db, base, nonces)]
                for person in people:
                    _enter(person, base)
            else:
                _resend(people, base)
            threads = [threading.Thread(target=_work, args=(person, base)) for person in people]
            for thread in threads:
                thread.start()
            if not last:
                # a few submits into the round, at a random moment while they are in flight
                SENT.wait_for(SENT.count + rng.randint(1, 5))
                time.sleep(rng.uniform(0.0, 0.03))
                server.process.kill()  # type: ignore[union-attr]  # SIGKILL: no shutdown, no flush
                server.process.wait()  # type: ignore[union-attr]
            for thread in threads:
                thread.join(timeout=120)
            assert not any(thread.is_alive() for thread in threads)
        finally:
            _stop(server)
        assert not [e for p in people for e in p.errors]
        _check(db, nonces, people)
        with sqlite3.connect(db) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert SENT.cut > 0, "no kill landed on a submit in flight: the test checked nothing"
    # the last round ran to the end: every item of every participant is stored, once
    stored, rows, _ = _stored(db, nonces)
    assert rows == PARTICIPANTS * ITEMS
    assert all(len(items) == ITEMS for items in stored.values())
    assert sum(len(p.acked) for p in people) == PARTICIPANTS * ITEMS
    for person in people:
        person.client.close()  # type: ignore[attr-defined]


@pytest.mark.postgres
def test_two_server_processes_on_postgresql_serve_the_same_participants_alternately(tmp_path: Path,
                                                                                     pg_url: str) -> None:
    """Stateless cookies: each participant's page comes from one process, her submit goes to the other."""
    pytest.importorskip("uvicorn", reason="the [web] extra is not installed")
    db, nonces = _project(tmp_path, pg_url)
    cache = tmp_path / "cache"
    first, second = Server(db, STUDY, cache), Server(db, STUDY, cache)  # type: ignore[arg-type]
    try:
        first.start()
        second.start()
        bases = [first.origin, second.origin]
        assert bases[0] != bases[1]
        people = [Person(link) for link in _links(db, bases[0], nonces)]
        for person in people:
            _enter(person, bases[0])
        outcomes: list[list[bool | None]] = []

        def alternate(person: Person) -> None:
            for step in range(ITEMS):
                current = _item(person, bases[step % 2])
                assert current is not None
                item_id, csrf = current
                outcomes.append(_double_submit(person, bases[(step + 1) % 2], item_id, csrf))
                person.acked.add(item_id)

        threads = [threading.Thread(target=alternate, args=(person,)) for person in people]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not [e for p in people for e in p.errors]
        # each double submit: both acknowledged, exactly one created
        assert len(outcomes) == PARTICIPANTS * ITEMS
        assert all(sorted(o) == [False, True] for o in outcomes), outcomes  # type: ignore[type-var]
        for person in people:
            assert _item(person, bases[1]) is None  # the other process shows her the end page
            person.client.close()  # type: ignore[attr-defined]
    finally:
        _stop(first)
        _stop(second)
    stored, rows, distinct = _stored(db, nonces)
    assert rows == distinct == PARTICIPANTS * ITEMS
    for nonce, person in zip(nonces, people):
        assert sorted(stored[nonce]) == sorted(person.acked)


def _read_response(sock, first: bytes = b"") -> bytes:  # type: ignore[no-untyped-def]
    """One HTTP/1.1 response with a Content-Length body from a raw socket."""
    data = first
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def test_a_slow_reader_keeps_its_connection_for_the_next_request(tmp_path: Path) -> None:
    """A participant still reading a headphone sound when the server has written it all (a slow link)
    sends her next request on the same connection: it must be answered, not cut (uvicorn's 5 s
    keep-alive starts when the response is written, and cut such requests under load in bench W1)."""
    import socket
    from urllib.parse import urlsplit

    pytest.importorskip("uvicorn", reason="the [web] extra is not installed")
    db, nonces = _project(tmp_path)
    server = Server(db, STUDY, tmp_path / "cache").start()  # type: ignore[arg-type]
    try:
        person = Person(_links(db, server.origin, nonces)[0])
        _enter(person, server.origin)
        cookie = "; ".join(f"{c.name}={c.value}" for c in person.client.cookies.jar)  # type: ignore[attr-defined]
        person.client.close()  # type: ignore[attr-defined]
        parts = urlsplit(server.origin)
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            request = f"GET /hp/1.wav HTTP/1.1\r\nHost: {parts.netloc}\r\nCookie: {cookie}\r\n\r\n".encode()
            sock.sendall(request)
            time.sleep(6.0)  # the participant's link is slow: the server has long finished writing
            first = _read_response(sock)
            assert first.startswith(b"HTTP/1.1 200") and len(first) > 256_000  # the whole sound (16 kHz, 4 s)
            sock.sendall(request)
            second = _read_response(sock)
            assert second.startswith(b"HTTP/1.1 200"), "the server closed the connection under the next request"
    finally:
        _stop(server)
