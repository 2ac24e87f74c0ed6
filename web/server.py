"""Running the study page: warm the audio cache, bind, say so, serve under uvicorn until Ctrl-C.

``aglw serve`` (cli/web_cmds.py) calls :func:`serve`. The socket is bound and listening before the
ready line is printed, so a client that reads the line can connect at once. With ``workers`` > 1
uvicorn forks workers that share the socket; each builds its app from the environment
(:func:`app_from_environment`) and opens its own store. Requests carry their state in signed
cookies, so any worker serves any participant.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from storage import Store
from storage import tables as T
from workbench.errors import AglwError
from workbench.studies.web_study import StudyConfig, load_study

KEEP_ALIVE_S = 75
EXTRA_HINT = "the study page needs the [web] extra: pip install 'agl-workbench[web]'"
_ENV = {"db": "AGLW_WEB_DB", "study": "AGLW_WEB_STUDY", "cache": "AGLW_WEB_CACHE",
        "secure": "AGLW_WEB_SECURE_COOKIES", "proxy": "AGLW_WEB_PROXY_HEADERS"}


def require_web_extra() -> None:
    """One line naming the extra when the web stack is not installed."""
    try:
        import itsdangerous  # noqa: F401
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise AglwError(f"{EXTRA_HINT} ({exc.name} is missing)") from None


def study_clip_ids(store: Store, study: StudyConfig) -> list[int]:
    """Every clip the study may play: its items, attention clips and the practice clip."""
    c = T.web_study_clip.c
    with store.read() as connection:
        ids = [int(x) for (x,) in connection.execute(select(c.clip_id).where(c.study_id == study.id))]
    if study.practice_clip_id is not None:
        ids.append(int(study.practice_clip_id))
    return sorted(set(ids))


def check_workers(store: Store, workers: int) -> None:
    """Several workers only on PostgreSQL: SQLite takes one writer at a time."""
    if workers < 1:
        raise AglwError(f"--workers {workers}: give 1 or more")
    if workers > 1 and store.engine.dialect.name == "sqlite":
        raise AglwError("--workers > 1 needs a PostgreSQL project (SQLite allows one writer); serve with one worker")


@dataclass(frozen=True)
class Ready:
    """What the ready line says."""

    url: str
    study: str
    mode: str


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise AglwError(f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port (0: any free one)") \
            from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def app_from_environment() -> Any:
    """The app of one uvicorn worker (``--workers`` > 1), configured by :func:`serve` through the environment."""
    from storage import open_store
    from web.app import create_app

    store = open_store(os.environ[_ENV["db"]])
    return create_app(store, os.environ[_ENV["study"]], cache_dir=Path(os.environ[_ENV["cache"]]),
                      secure_cookies=os.environ.get(_ENV["secure"]) == "1",
                      proxy_headers=os.environ.get(_ENV["proxy"]) == "1")


def serve(
    store: Store,
    db: str,
    study_name: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    workers: int = 1,
    cache_dir: Path | None = None,
    secure_cookies: bool = False,
    proxy_headers: bool = False,
    warm: Callable[[list[int]], Any] | None = None,
    on_ready: Callable[[Ready], None] = lambda ready: None,
) -> None:
    """Serve ``study_name`` until Ctrl-C; requests in flight finish before it returns."""
    require_web_extra()
    import uvicorn

    from workbench.audio.blind_audio import default_cache_dir

    study = load_study(store, study_name)
    check_workers(store, workers)
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    # Transcode every clip before the first participant comes (the blind re-encode is cached by
    # content hash, so a restart finds them done).
    if warm is not None:
        warm(study_clip_ids(store, study))
    sock = _bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    url = f"http://{shown_host}:{bound_port}/"
    # Keep-alive 75 s (nginx's default), not uvicorn's 5 s: uvicorn starts that timer once a response
    # is handed to the socket, so a client still reading a large body (the six 0.7 MB headphone
    # sounds, a clip) sends its next request onto a connection being closed; bench W1 (200
    # participants, shared machine) lost 66 of 7,408 requests so ("Server disconnected without
    # sending a response", 4 of them headphone answers), none with 60 s.
    common: dict[str, Any] = {"proxy_headers": proxy_headers, "server_header": False, "access_log": False,
                              "log_level": "warning", "timeout_graceful_shutdown": 30, "lifespan": "off",
                              "timeout_keep_alive": KEEP_ALIVE_S}
    try:
        if workers == 1:
            from web.app import create_app

            app = create_app(store, study_name, cache_dir=cache_dir, secure_cookies=secure_cookies,
                             proxy_headers=proxy_headers)
            server = uvicorn.Server(uvicorn.Config(app, **common))
            on_ready(Ready(url, study.name, study.mode))
            server.run(sockets=[sock])
        else:
            from uvicorn.supervisors import Multiprocess

            os.environ.update({_ENV["db"]: db, _ENV["study"]: study_name, _ENV["cache"]: str(cache_dir),
                               _ENV["secure"]: "1" if secure_cookies else "0",
                               _ENV["proxy"]: "1" if proxy_headers else "0"})
            config = uvicorn.Config("web.server:app_from_environment", factory=True, workers=workers, **common)
            on_ready(Ready(url, study.name, study.mode))
            Multiprocess(config, sockets=[sock]).run()
    except KeyboardInterrupt:
        # uvicorn finishes the requests in flight on Ctrl-C, then raises the signal again: that
        # is the normal end of serving, not an error
        pass
    finally:
        sock.close()
