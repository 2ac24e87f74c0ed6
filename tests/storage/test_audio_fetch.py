"""fetch-audio against a local HTTP server: resume, restart, failure summary, store updates."""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from sqlmodel import select

from storage.models import Clip, Dataset, MediaRoot
from workbench.audio.fetch import FetchItem, fetch_audio, fetch_dataset_audio
from workbench.errors import InputError
from workbench.tasks import TaskContext


def _wav_bytes(seconds: float = 1.0, seed: int = 0) -> bytes:
    buffer = io.BytesIO()
    noise = np.random.default_rng(seed).standard_normal(int(8000 * seconds)).astype(np.float32) * 0.1
    sf.write(buffer, noise, 8000, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


class _Server:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.dropped: set[str] = set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: object) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                mode, _, name = self.path.strip("/").partition("/")
                range_header = self.headers.get("Range")
                outer.requests.append((self.path, range_header))
                if mode == "html":
                    body = b"<html><body>Item not available</body></html>"
                    self._send(200, body, {"Content-Type": "text/html"})
                    return
                data = outer.files.get(name)
                if data is None:
                    self._send(404, b"not found", {})
                    return
                start = 0
                if range_header and mode in ("range", "drop"):
                    match = re.match(r"bytes=(\d+)-", range_header)
                    start = int(match.group(1)) if match else 0
                    if start >= len(data):
                        self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                        return
                body = data[start:]
                status = 206 if start else 200
                headers = {"Content-Length": str(len(body)), "Accept-Ranges": "bytes" if mode != "norange" else "none"}
                if status == 206:
                    headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
                drop = mode in ("drop", "dropnorange") and self.path not in outer.dropped
                self.send_response(status)
                for header, value in headers.items():
                    self.send_header(header, value)
                self.end_headers()
                if drop:
                    outer.dropped.add(self.path)
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                for header, value in headers.items():
                    self.send_header(header, value)
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    yield srv
    srv.close()


def test_downloads_resume_and_failures(server: _Server, tmp_path: Path) -> None:
    good, big = _wav_bytes(seed=1), _wav_bytes(seconds=3, seed=2)
    server.files.update({"a.wav": good, "b.wav": big, "c.wav": big})
    items = [
        FetchItem("plain", f"{server.url}/range/a.wav", tmp_path / "plain.wav"),
        FetchItem("resumed", f"{server.url}/drop/b.wav", tmp_path / "resumed.wav"),
        FetchItem("restarted", f"{server.url}/dropnorange/c.wav", tmp_path / "restarted.wav"),
        FetchItem("missing", f"{server.url}/range/nothing.wav", tmp_path / "missing.wav"),
        FetchItem("html", f"{server.url}/html/page", tmp_path / "html.mp3"),
        FetchItem("local", f"file://{tmp_path / 'plain.wav'}", tmp_path / "local.wav"),
    ]
    seen: list[str] = []
    task = TaskContext(lambda event: seen.append(event.item.key) if event.item else None)
    summary = fetch_audio(items, workers=3, timeout=5, task=task)
    assert sorted(seen) == sorted(item.key for item in items)
    assert summary.downloaded == ["plain", "resumed", "restarted"]
    assert (tmp_path / "plain.wav").read_bytes() == good
    assert (tmp_path / "resumed.wav").read_bytes() == big
    assert (tmp_path / "restarted.wav").read_bytes() == big
    by_key = {r.key: r for r in summary.results}
    assert by_key["resumed"].resumed and not by_key["restarted"].resumed
    # The resumed download asked only for the missing half.
    ranges = [rng for path, rng in server.requests if path == "/drop/b.wav"]
    assert ranges == [None, f"bytes={len(big) // 2}-"]
    failed = summary.failed
    assert set(failed) == {"missing", "html", "local"}
    assert "HTTP 404" in failed["missing"]
    assert "not usable audio" in failed["html"]
    assert "only http(s)" in failed["local"]
    assert not (tmp_path / "html.mp3").exists() and not (tmp_path / "html.mp3.part").exists()
    assert summary.as_dict()["failed"] == 3
    again = fetch_audio(items[:1], workers=1)
    assert again.present == ["plain"]


def test_gives_up_after_retries_keeping_the_part_file(server: _Server, tmp_path: Path) -> None:
    data = _wav_bytes(seconds=2)
    server.files["x.wav"] = data
    dest = tmp_path / "x.wav"
    # No retries: the first (dropped) attempt is all there is; the .part stays for next time.
    first = fetch_audio([FetchItem("x", f"{server.url}/drop/x.wav", dest)], retries=0, timeout=5)
    assert "rerun to resume" in first.failed["x"]
    part = tmp_path / "x.wav.part"
    assert part.stat().st_size == len(data) // 2
    second = fetch_audio([FetchItem("x", f"{server.url}/drop/x.wav", dest)], retries=0, timeout=5)
    assert second.downloaded == ["x"] and dest.read_bytes() == data and not part.exists()


def test_fetch_dataset_audio_records_media_root_and_paths(store, server: _Server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server.files["one.wav"] = _wav_bytes(seed=3)
    with store.write() as s:
        dataset = Dataset(name="agl1k")
        s.add(dataset)
        s.flush()
        s.add(Clip(dataset_id=dataset.id, key="k1", mp3name="one.wav"))
        s.add(Clip(dataset_id=dataset.id, key="k2", mp3name="gone.wav"))
        s.add(Clip(dataset_id=dataset.id, key="k3", mp3name=None))
    to_dir = tmp_path / "media"
    summary = fetch_dataset_audio(store, None, to_dir, workers=2, url_template=server.url + "/range/{mp3name}", timeout=5)
    assert summary.downloaded == ["k1"]
    assert set(summary.failed) == {"k2", "k3"}
    with store.session() as s:
        clips = {c.key: c for c in s.exec(select(Clip))}
        roots = list(s.exec(select(MediaRoot)))
    assert clips["k1"].audio_path == "k1/one.wav"
    assert clips["k1"].content_hash is not None and len(clips["k1"].content_hash) == 64
    assert clips["k2"].audio_path is None
    assert [r.path for r in roots] == [str(to_dir.resolve())]
    # Rerun: nothing downloaded again, no duplicate media root.
    rerun = fetch_dataset_audio(store, ["k1"], to_dir, url_template=server.url + "/range/{mp3name}")
    assert rerun.present == ["k1"]
    with store.session() as s:
        assert len(list(s.exec(select(MediaRoot)))) == 1
    with pytest.raises(InputError, match="unknown clip keys: nope"):
        fetch_dataset_audio(store, ["nope"], to_dir)
    with pytest.raises(InputError, match="URL template .* is invalid"):
        fetch_dataset_audio(store, None, to_dir, url_template="http://x/{name}")


def test_fetch_dataset_audio_refuses_path_like_names(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with store.write() as s:
        dataset = Dataset(name="evil")
        s.add(dataset)
        s.flush()
        s.add(Clip(dataset_id=dataset.id, key="k", mp3name="../../etc/passwd"))
    with pytest.raises(InputError, match="not a plain file name"):
        fetch_dataset_audio(store, None, tmp_path)
