"""W1: the study page under 200 simulated participants (SQLite, one server process).

Target (design/web-study.md, "Targets"): 200 participants on one 2-core machine, each the page,
the audio, 10 submits: 0 errors, 0 lost or duplicated guesses, p95 submit <= 100 ms, p95 page
<= 150 ms, audio first byte p95 <= 200 ms from the warmed transcode cache, first page load
<= 400 kB including the map.

Set-up: a project of 16 synthetic 20 s stereo clips at 44.1 kHz (noise and tones, an inter-aural
level difference), a study of 10 clips per participant with the headphone check recorded, the
blind audio cache warmed, 200 invitations. The server is the study page's app
(:func:`web.app.create_app`) under uvicorn on 127.0.0.1 (port 0) in its own process, the load a
second process (asyncio + httpx, one client and cookie jar per participant). All participants
come from 127.0.0.1, so the per-address limit is raised for the run (real participants come from
their own addresses); every other guard (cookie, CSRF, Origin, per-participant limit) is as served.

Each participant: the invitation link, the consent page and form, the headphone page, the six
trial sounds, the headphone answers, then 10 times: the item page, its audio (whole, as a listener
fetches it; first byte timed), a think time of 5-15 s, the submit; then the end page.
Participants arrive evenly over 60 s (``--think``, ``--arrival`` change the pacing; ``--think 0.3,1.0
--arrival 30`` is a stress run). Loops are bounded and the whole run stops after 600 s.

Printed: errors (by request and cause), guesses acknowledged vs stored (lost, duplicated), p50/p95
of each request kind, audio first byte, the first page's bytes (HTML, styles, scripts), the server's
and the load's CPU time (on a shared machine the latencies carry its load; the CPU per request
does not), figures next to targets. Never asserts. ``--participants N`` for a quicker run;
``--keep-alive S`` sets uvicorn's keep-alive timeout (default: what ``aglw serve`` runs; 5 s, uvicorn's
own default, lost requests here).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_PARTICIPANTS = 200
ITEMS = 10
N_CLIPS = 16
CLIP_S = 20.0
SAMPLE_RATE = 44100
# Pacing: participants arrive evenly over ARRIVAL_S; between an item's audio and its submit each
# thinks THINK_S (a brisk participant: a person who listens to the 20 s clip takes longer). The
# stress variant (--think 0.3,1.0 --arrival 30) offers several times what people would.
ARRIVAL_S = 60.0
THINK_S = (5.0, 15.0)
RUN_LIMIT_S = 600.0
STUDY = "w1"
TARGETS = {"submit_p95_ms": 100.0, "page_p95_ms": 150.0, "audio_first_byte_p95_ms": 200.0, "first_page_kb": 400.0}
# --- the project --------------------------------------------------------------------------------

def build_project(folder: Path) -> Path:
    """The synthetic project with its study; returns the database file."""
    from storage import open_store
    from tests.web.synthetic_project import build

    db = folder / "w1.sqlite"
    store = open_store(db)
    try:
        build(store, folder, STUDY, n_clips=N_CLIPS, per_participant=ITEMS,
              target_per_clip=math.ceil(N_PARTICIPANTS * ITEMS / N_CLIPS), seconds=CLIP_S, sample_rate=SAMPLE_RATE,
              headphone_check="record", completion_code="W1-DONE")
    finally:
        store.dispose()
    return db


def warm_and_invite(db: Path, cache: Path, n: int, base_url: str) -> tuple[float, list[str]]:
    from storage import open_store
    from web.server import study_clip_ids
    from web.tokens import invite_link
    from workbench.audio.blind_audio import warm_cache
    from workbench.studies import web_study

    store = open_store(db)
    try:
        study = web_study.load_study(store, STUDY)
        start = time.perf_counter()
        warm_cache(store, study_clip_ids(store, study), cache)
        warm_s = time.perf_counter() - start
        config, nonces = web_study.invite(store, STUDY, n)
        return warm_s, [invite_link(base_url, config, nonce) for nonce in nonces]
    finally:
        store.dispose()


def stored_guesses(db: Path) -> tuple[int, int, set[tuple[int, str]]]:
    """(rows, distinct assignments, {(participant id, item id)}) of the study's guesses."""
    from sqlalchemy import func, select

    from storage import open_store
    from storage import tables as T

    store = open_store(db)
    g, a = T.web_guess.c, T.web_assignment.c
    try:
        with store.read() as connection:
            rows = connection.execute(select(func.count()).select_from(T.web_guess)).scalar_one()
            distinct = connection.execute(select(func.count(func.distinct(g.assignment_id)))).scalar_one()
            pairs = {(int(p), str(i)) for p, i in connection.execute(
                select(a.participant_id, a.item_id).join(T.web_guess, g.assignment_id == a.id))}
        return int(rows), int(distinct), pairs
    finally:
        store.dispose()


# --- the server process -------------------------------------------------------------------------

def serve(db: str, cache: str, keep_alive_s: str) -> None:
    """The app under uvicorn on 127.0.0.1, any free port; prints the port, serves until killed."""
    import socket

    import uvicorn

    from storage import open_store
    from web.app import create_app

    store = open_store(db)
    app = create_app(store, STUDY, cache_dir=Path(cache), address_rate=1e9, address_burst=1e9)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    config = uvicorn.Config(app, access_log=False, log_level="warning", lifespan="off", server_header=False,
                            timeout_keep_alive=int(keep_alive_s))
    uvicorn.Server(config).run(sockets=[sock])


# --- the load process ---------------------------------------------------------------------------

class Load:
    def __init__(self, base: str, think: tuple[float, ...], arrival_s: float) -> None:
        self.base = base
        self.think = think
        self.arrival_s = arrival_s
        self.times: dict[str, list[float]] = {}
        self.errors: list[str] = []
        self.acked: list[tuple[str, str, bool]] = []  # (cookie's participant link, item id, created)
        self.first_page: dict[str, int] = {}

    def note(self, kind: str, seconds: float) -> None:
        self.times.setdefault(kind, []).append(seconds)

    async def request(self, client, kind: str, method: str, url: str, expect: tuple[int, ...] = (200,), **kw):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            response = await client.request(method, url, **kw)
        except Exception as exc:  # noqa: BLE001 - named with the request it cut
            raise RuntimeError(f"{kind} after {time.perf_counter() - start:.1f} s: {type(exc).__name__} {exc!r}") from exc
        self.note(kind, time.perf_counter() - start)
        if response.status_code not in expect:
            raise RuntimeError(f"{method} {url.split('?')[0][:40]}: HTTP {response.status_code} {response.text[:160]!r}")
        return response

    async def audio(self, client, item_id: str) -> None:  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            async with client.stream("GET", f"/audio/{item_id}", headers={"range": "bytes=0-"}) as response:
                if response.status_code not in (200, 206):
                    raise RuntimeError(f"audio: HTTP {response.status_code}")
                first = True
                async for _chunk in response.aiter_raw():
                    if first:
                        self.note("audio_first_byte", time.perf_counter() - start)
                        first = False
        except Exception as exc:  # noqa: BLE001 - named with the request it cut
            raise RuntimeError(f"audio after {time.perf_counter() - start:.1f} s: {type(exc).__name__} {exc!r}") from exc
        self.note("audio_whole", time.perf_counter() - start)

    async def participant(self, index: int, link: str, delay: float, rng: random.Random) -> None:
        import httpx

        await asyncio.sleep(delay)
        origin = {"origin": self.base}
        async with httpx.AsyncClient(base_url=self.base, timeout=60.0, follow_redirects=False) as client:
            try:
                await self.request(client, "entry", "GET", link.removeprefix(self.base))
                page = await self.request(client, "page_consent", "GET", "/")
                csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
                await self.request(client, "consent", "POST", "/consent", expect=(303,), content=f"csrf={csrf}",
                                   headers={"content-type": "application/x-www-form-urlencoded", **origin})
                page = await self.request(client, "page_headphones", "GET", "/")
                csrf = re.search(r'data-csrf="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
                for trial in range(1, 7):
                    await self.request(client, "headphone_sound", "GET", f"/hp/{trial}.wav")
                await self.request(client, "headphones", "POST", "/api/headphones",
                                   json={"answers": [rng.randint(1, 3) for _ in range(6)]},
                                   headers={"x-csrf-token": csrf, "accept": "application/json", **origin})
                for _ in range(ITEMS):
                    page = await self.request(client, "page_item", "GET", "/")
                    if not self.first_page:
                        self.first_page["html"] = 0  # one participant weighs it
                        await self.weigh(client, page.text)
                    found = re.search(r'data-item-id="([^"]+)"', page.text)
                    if found is None:
                        raise RuntimeError("the item page names no item")
                    item_id = found.group(1)
                    csrf = re.search(r'data-csrf="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
                    await self.audio(client, item_id)
                    await asyncio.sleep(rng.uniform(self.think[0], self.think[1]))
                    answer = {"item_id": item_id, "latitude": rng.uniform(-60, 70), "longitude": rng.uniform(-180, 180),
                              "confidence": 0.5, "listen_s": 20.0, "answer_s": 5.0, "n_plays": 1}
                    response = await self.request(client, "submit", "POST", "/api/submit", json=answer,
                                                  headers={"x-csrf-token": csrf, "accept": "application/json", **origin})
                    self.acked.append((link, item_id, bool(response.json().get("created"))))
                page = await self.request(client, "page_done", "GET", "/")
                if "W1-DONE" not in page.text:
                    raise RuntimeError("the end page has no completion code")
            except Exception as exc:  # noqa: BLE001 - every failure is counted, the run goes on
                self.errors.append(f"participant {index}: {type(exc).__name__}: {exc}")

    async def weigh(self, client, html: str) -> None:  # type: ignore[no-untyped-def]
        """The first item page's bytes: the HTML (with the map) and every style and script it loads."""
        self.first_page["html"] = len(html.encode("utf-8"))
        for url in re.findall(r'(?:src|href)="(/static/[^"]+)"', html):
            response = await client.get(url)
            self.first_page[url] = len(response.content)

    async def run(self, links: list[str]) -> None:
        rng = random.Random(1)
        tasks = [self.participant(i, link, self.arrival_s * i / len(links), random.Random(rng.random()))
                 for i, link in enumerate(links)]
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=RUN_LIMIT_S)


def load(base: str, links_file: str, out_file: str, *, think: tuple[float, ...], arrival_s: float) -> None:
    links = json.loads(Path(links_file).read_text())
    runner = Load(base, think, arrival_s)
    start = time.perf_counter()
    try:
        asyncio.run(runner.run(links))
    except asyncio.TimeoutError:
        runner.errors.append(f"the run passed its limit of {RUN_LIMIT_S:.0f} s")
    Path(out_file).write_text(json.dumps({"times": runner.times, "errors": runner.errors, "acked": runner.acked,
                                          "first_page": runner.first_page, "wall_s": time.perf_counter() - start,
                                          "think": think, "arrival_s": arrival_s}))


# --- the report ---------------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc; 0 where it cannot be read)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def participant_of(db: Path, links: list[str]) -> dict[str, int]:
    """Link -> participant id (the invitation's nonce names her row)."""
    from sqlalchemy import select

    from storage import open_store
    from storage import tables as T
    from web import tokens
    from workbench.studies import web_study

    store = open_store(db)
    try:
        study = web_study.load_study(store, STUDY)
        p = T.web_participant.c
        with store.read() as connection:
            by_nonce = {str(n): int(i) for i, n in connection.execute(select(p.id, p.invite_nonce))}
        return {link: by_nonce.get(tokens.read_invite(study, link.rsplit("/", 1)[1]), -1) for link in links}
    finally:
        store.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=N_PARTICIPANTS)
    parser.add_argument("--think", default=f"{THINK_S[0]},{THINK_S[1]}", help="think time range in seconds: LOW,HIGH")
    parser.add_argument("--arrival", type=float, default=ARRIVAL_S, help="seconds over which participants arrive")
    parser.add_argument("--serve", nargs=3, metavar=("DB", "CACHE", "KEEP_ALIVE_S"), help=argparse.SUPPRESS)
    parser.add_argument("--keep-alive", type=int, default=None,
                        help="uvicorn's keep-alive timeout in seconds (default: aglw serve's, web.server.KEEP_ALIVE_S)")
    parser.add_argument("--load", nargs=3, metavar=("BASE", "LINKS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.keep_alive is None:
        from web.server import KEEP_ALIVE_S

        args.keep_alive = KEEP_ALIVE_S
    if args.serve:
        serve(*args.serve)
        return 0
    think = tuple(float(x) for x in args.think.split(","))
    if args.load:
        load(*args.load, think=think, arrival_s=args.arrival)
        return 0
    try:
        import httpx  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        print(f"skip: the [web] extra is not installed ({exc.name} is missing)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {**os.environ, "AGLW_CACHE_DIR": str(folder / "user-cache"), "PYTHONUNBUFFERED": "1"}
        os.environ["AGLW_CACHE_DIR"] = env["AGLW_CACHE_DIR"]
        start = time.perf_counter()
        db = build_project(folder)
        cache = folder / "blind-audio"
        print(f"project: {N_CLIPS} clips of {CLIP_S:.0f} s, stereo {SAMPLE_RATE} Hz, built in "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(db), str(cache), str(args.keep_alive)],
                                  cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            port = json.loads(server.stdout.readline())["port"]
            base = f"http://127.0.0.1:{port}"
            warm_s, links = warm_and_invite(db, cache, args.participants, base)
            print(f"blind audio cache warmed in {warm_s:.1f} s ({N_CLIPS} clips); {len(links)} invitations", flush=True)
            links_file, out_file = folder / "links.json", folder / "load.json"
            links_file.write_text(json.dumps(links))
            server_cpu_before = cpu_seconds(server.pid)
            children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, __file__, "--load", base, str(links_file), str(out_file),
                            "--think", args.think, "--arrival", str(args.arrival)], cwd=ROOT,
                           env=env, check=True, timeout=RUN_LIMIT_S + 60)
            server_cpu = cpu_seconds(server.pid) - server_cpu_before
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            client_cpu = (children.ru_utime + children.ru_stime) - (children_before.ru_utime + children_before.ru_stime)
        finally:
            server.terminate()
            server.wait(timeout=30)
        result = json.loads(out_file.read_text())
        report(db, links, result, server_cpu, client_cpu)
    return 0


def report(db: Path, links: list[str], result: dict, server_cpu_s: float,  # type: ignore[type-arg]
           client_cpu_s: float) -> None:
    times = {kind: [s * 1000 for s in values] for kind, values in result["times"].items()}
    who = participant_of(db, links)
    acked = {(who[link], item) for link, item, _ in result["acked"]}
    created = sum(1 for _, _, c in result["acked"] if c)
    rows, distinct, stored = stored_guesses(db)
    lost = len(acked - stored)
    unacknowledged = len(stored - acked)
    duplicated = rows - distinct
    n_requests = sum(len(v) for v in times.values())
    print(f"load: {len(links)} participants x {ITEMS} clips, {n_requests:,} requests in {result['wall_s']:.1f} s "
          f"({n_requests / result['wall_s']:.0f} requests/s), arrivals over {result['arrival_s']:.0f} s, think "
          f"{result['think'][0]:g}-{result['think'][1]:g} s; machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if server_cpu_s:
        per_request = server_cpu_s / n_requests * 1000
        print(f"server CPU: {server_cpu_s:.1f} s for {n_requests:,} requests = {per_request:.1f} ms per request on "
              f"average ({server_cpu_s / result['wall_s'] * 100:.0f} % of one core over the run; one core of its own "
              f"would serve ~{1000 / per_request:.0f} such requests/s); the load process: {client_cpu_s:.1f} s "
              f"({client_cpu_s / result['wall_s'] * 100:.0f} % of one core)")
    print(f"errors: {len(result['errors'])} (target 0)")
    causes = Counter(" ".join(m.groups()) if (m := re.search(r": (\w+) after [\d.]+ s: (\w+)", e)) else e
                     for e in result["errors"])
    for cause, count in causes.most_common(6):
        print(f"  {count} x {cause}")
    print(f"guesses: {len(result['acked']):,} submits acknowledged ({created:,} created), {rows:,} rows stored; "
          f"lost {lost}, duplicated {duplicated}, stored without acknowledgement {unacknowledged} (target 0, 0)")
    print(f"{'request':<18}{'n':>7}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}")
    for kind in ("entry", "page_consent", "consent", "page_headphones", "headphone_sound", "headphones", "page_item",
                 "audio_first_byte", "audio_whole", "submit", "page_done"):
        values = times.get(kind, [])
        if values:
            print(f"{kind:<18}{len(values):>7,}{statistics.median(values):>9.1f}{percentile(values, 95):>9.1f}"
                  f"{max(values):>9.1f}")
    pages = times.get("page_item", []) + times.get("page_consent", []) + times.get("page_headphones", []) \
        + times.get("page_done", [])
    first_page_kb = sum(result["first_page"].values()) / 1000
    figures = {
        "submit_p95_ms": (percentile(times.get("submit", []), 95), len(times.get("submit", []))),
        "page_p95_ms": (percentile(pages, 95), len(pages)),
        "audio_first_byte_p95_ms": (percentile(times.get("audio_first_byte", []), 95),
                                    len(times.get("audio_first_byte", []))),
        "first_page_kb": (first_page_kb, 1),
    }
    parts = ", ".join(f"{k} {v / 1000:.1f}" for k, v in result["first_page"].items())
    print(f"first page (item page with the map): {first_page_kb:.1f} kB ({parts} kB)")
    for name, (value, n) in figures.items():
        verdict = "meets" if value <= TARGETS[name] else "MISSES"
        print(f"{name}: {value:.1f} (n = {n:,}) target <= {TARGETS[name]:g}: {verdict}")


if __name__ == "__main__":
    sys.exit(main())
