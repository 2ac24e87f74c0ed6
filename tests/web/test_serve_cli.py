"""`aglw serve NAME`: the ready line, Ctrl-C, and its one-line refusals (design/cli.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.web.server_walk import demo_copy, new_study

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("audio-cache")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("serve")
    db = demo_copy(base, base / "p")
    store, _ = new_study(db, "s1", mode="game", per_participant=2, headphone_check="off")
    store.dispose()
    return db


def _aglw(*args: str, code: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    program = f"import sys\n{code}\nfrom cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, cwd=REPO,
                          timeout=300, env=env)


def _closed(server) -> None:  # type: ignore[no-untyped-def]
    for stream in (server.process.stdout, server.process.stderr):
        if stream is not None and not stream.closed:
            stream.close()


def test_serve_prints_one_ready_line_serves_and_stops_on_ctrl_c(project: Path, cache: Path) -> None:
    import httpx

    from tests.web.browser import Server

    server = Server(project, "s1", cache).start()
    try:
        assert server.ready == {"url": server.url + "/", "study": "s1", "mode": "game"}
        assert server.url.startswith("http://127.0.0.1:")
        response = httpx.get(server.url + "/")
        assert response.status_code == 403 and response.headers["x-content-type-options"] == "nosniff"
        assert "default-src 'self'" in response.headers["content-security-policy"]
    finally:
        server.stop()
    assert server.process is not None and server.process.returncode == 0
    _closed(server)  # (the plain ready line's test checks that nothing follows the line)
    # the audio was prepared before listening
    assert any(cache.rglob("*.*"))


@pytest.mark.parametrize("args, code, words", [
    (["serve", "nope"], 1, "no web study 'nope'"),
    (["serve", "s1", "--workers", "2"], 1, "PostgreSQL"),
    (["serve", "s1", "--port", "70000"], 2, "--port"),
    (["serve", "s1", "--workers", "0"], 2, "--workers"),
])
def test_serve_refuses_in_one_line(project: Path, args: list[str], code: int, words: str) -> None:
    result = _aglw("--db", str(project), *args)
    assert result.returncode == code, result.stderr
    assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""


def test_serve_without_the_web_extra_names_it(project: Path) -> None:
    result = _aglw("--db", str(project), "serve", "s1", code="sys.modules['uvicorn'] = None")
    assert result.returncode == 1
    assert "pip install 'agl-workbench[web]'" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_plain_ready_line_says_where(project: Path, cache: Path) -> None:
    import os
    import signal

    env = {**os.environ, "AGLW_CACHE_DIR": str(cache)}
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "--db", str(project), "serve", "s1", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
    try:
        line = process.stdout.readline() if process.stdout else ""
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert line.startswith("Serving web study s1 (game mode) at http://127.0.0.1:") and out == ""
    assert process.returncode == 0, err
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)


WORKERS = '''
import os, signal, sys, threading
from pathlib import Path

import httpx

from web import server
from web.tokens import invite_link
from workbench.studies import web_study


def main():
    from storage import open_store

    db, cache = sys.argv[1], Path(sys.argv[2])
    store = open_store(db)
    server.check_workers = lambda store, workers: None  # the SQLite refusal aside: the workers themselves

    def ready(line):
        def probe():
            config, nonces = web_study.invite(store, "s1", 4)
            statuses = []
            for nonce in nonces:
                with httpx.Client(base_url=line.url, timeout=60) as client:
                    statuses.append(client.get(invite_link(line.url, config, nonce)).status_code)
                    statuses.append(client.get("/").status_code)
            print(" ".join(map(str, statuses)), flush=True)
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=probe, daemon=True).start()

    server.serve(store, db, "s1", port=0, workers=2, cache_dir=cache, on_ready=ready)
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
'''


def test_two_workers_serve_any_participant_and_stop_on_ctrl_c(project: Path, cache: Path, tmp_path: Path) -> None:
    """`--workers 2` (uvicorn's Multiprocess on one socket): each worker builds the app and answers."""
    script = tmp_path / "two_workers.py"
    script.write_text(WORKERS, encoding="utf-8")
    result = subprocess.run([sys.executable, str(script), str(project), str(cache)], capture_output=True, text=True,
                            cwd=REPO, timeout=300, env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    lines = result.stdout.strip().splitlines()
    assert lines == ["200 200 200 200 200 200 200 200", "stopped"], result.stderr[-3000:]
