"""Driving the study page's app in-process (Starlette's TestClient): a demo project with studies, and a
participant who walks it while every response (status, headers, cookies, body) is kept for the census."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from storage import open_store
from storage import tables as T

pytest.importorskip("starlette", reason="the study page needs the [web] extra")
from starlette.testclient import TestClient  # noqa: E402

BASE = "http://127.0.0.1:8765"
CONSENT = "You will hear **short** recordings.\n\n<script>window.__leak=1</script> is text here."


def demo_copy(template_dir: Path, target: Path) -> Path:
    """A fresh copy of the demo project made once per module (the demo takes seconds to write)."""
    if not (template_dir / "demo" / "demo.sqlite").exists():
        from workbench.demo import create_demo_project

        create_demo_project(template_dir / "demo")
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template_dir / "demo" / "demo.sqlite", target / "project.sqlite")
    return target / "project.sqlite"


def media_files(template_dir: Path) -> list[Path]:
    return sorted(p for p in (template_dir / "demo").rglob("*") if p.is_file() and p.suffix in (".wav", ".flac", ".mp3"))


def count(store, table, *where) -> int:  # type: ignore[no-untyped-def]
    with store.read() as connection:
        return int(connection.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


@dataclass
class Walker:
    """One participant's browser, reduced to what the server sees and sends."""

    client: TestClient
    study: Any
    received: list[tuple[str, bytes]] = field(default_factory=list)
    csrf: str = ""

    def keep(self, what: str, response: Any) -> Any:
        self.received.append((f"URL {what}", str(response.url).encode()))
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
        self.received.append((f"headers of {what}", headers.encode()))
        self.received.append((f"body of {what}", response.content))
        self.received.append((f"cookies after {what}", repr(dict(self.client.cookies)).encode()))
        return response

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.keep(f"GET {path}", self.client.get(path, **kwargs))

    def post_json(self, path: str, body: Any, *, csrf: str | None = None, **kwargs: Any) -> Any:
        headers = {"x-csrf-token": self.csrf if csrf is None else csrf, "accept": "application/json",
                   **kwargs.pop("headers", {})}
        return self.keep(f"POST {path}", self.client.post(path, json=body, headers=headers, **kwargs))

    def page(self) -> Any:
        response = self.get("/")
        match = re.search(r'name="csrf" value="([^"]+)"|data-csrf="([^"]+)"', response.text)
        if match:
            self.csrf = match.group(1) or match.group(2)
        return response

    def enter(self, link: str) -> Any:
        response = self.get(link.removeprefix(BASE))
        return response

    def consent(self) -> Any:
        self.page()
        return self.keep("POST /consent", self.client.post("/consent", data={"csrf": self.csrf},
                                                           follow_redirects=False))

    def participant_id(self) -> int:
        from web.tokens import read_session

        return read_session(self.study, self.client.cookies["aglw_session"])

    def headphones(self, *, right: bool = True) -> Any:
        from workbench.studies import web_session

        self.page()
        truth = web_session.headphone_trials(self.study, self.participant_id())
        answers = truth if right else [t % 3 + 1 for t in truth]
        for trial in range(1, len(truth) + 1):
            assert self.get(f"/hp/{trial}.wav").status_code == 200
        return self.post_json("/api/headphones", {"answers": answers})

    def item(self) -> tuple[str, str]:
        """The current item's id and progress text."""
        response = self.page()
        item = re.search(r'data-item-id="([^"]+)"', response.text)
        progress = re.search(r'data-testid="progress">([^<]+)<', response.text)
        assert item and progress, response.text[-2000:]
        return item.group(1), progress.group(1)

    def listen(self, item_id: str) -> Any:
        """Both recordings the page offers (Ogg, and MP3 for Safari) go into the census; the Ogg one is returned."""
        self.get(f"/audio/{item_id}", headers={"range": "bytes=0-1023"})
        self.get(f"/audio/{item_id}/mp3")
        return self.get(f"/audio/{item_id}")

    def guess(self, item_id: str, /, **fields: Any) -> Any:
        body = {"item_id": item_id, "latitude": 48.0, "longitude": 2.0, "confidence": 0.5, "clue": "birds",
                **fields}
        return self.post_json("/api/submit", body)


def new_study(db: Path, name: str, **options: Any) -> tuple[Any, Any]:
    """Create a study on the project ``db``; (store, config)."""
    from workbench.studies import web_study

    store = open_store(db)
    config, _ = web_study.create_study(store, name, **options)
    return store, config


def app_for(store, name: str, cache_dir: Path, **options: Any) -> Any:  # type: ignore[no-untyped-def]
    from web.app import create_app

    return create_app(store, name, cache_dir=cache_dir, **options)


def invited(store, name: str, app: Any, **client: Any) -> Walker:  # type: ignore[no-untyped-def]
    """A participant who opened her invitation link (entered, cookie set)."""
    from web.tokens import invite_link
    from workbench.studies import web_study

    config, (nonce,) = web_study.invite(store, name, 1)
    walker = Walker(TestClient(app, base_url=client.pop("base_url", BASE), **client), config)
    response = walker.enter(invite_link(BASE, config, nonce))
    assert response.status_code == 200, response.text
    return walker


def participants_started(store) -> int:  # type: ignore[no-untyped-def]
    return count(store, T.web_participant, T.web_participant.c.started_at.is_not(None))
