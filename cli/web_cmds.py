"""`aglw serve NAME`: the study page of one web study (design/web-study.md, issue 38).

The web stack (starlette, uvicorn, jinja2, itsdangerous: the ``[web]`` extra) is imported when the
command runs; without it the command says which extra to install.
"""

from __future__ import annotations

import json
import sys

import typer

from cli.context import app_context, require_project, run_task, say, usage_error


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""

    @app.command("serve")
    def serve_cmd(
        ctx: typer.Context,
        name: str = typer.Argument(..., help="The web study to serve (aglw study web NAME creates one)."),
        host: str = typer.Option("127.0.0.1", "--host",
                                 help="Address to listen on (a public study runs behind a TLS proxy: keep 127.0.0.1)."),
        port: int = typer.Option(8765, "--port", help="Port to listen on; 0 takes any free port."),
        workers: int = typer.Option(1, "--workers", help="Worker processes (more than 1 only on PostgreSQL)."),
        proxy_headers: bool = typer.Option(
            False, "--proxy-headers",
            help="Trust X-Forwarded-Proto/-For from a proxy on 127.0.0.1 (cookies become Secure over https)."),
        secure_cookies: bool = typer.Option(False, "--secure-cookies",
                                            help="Mark the session cookie Secure (the page is served over https)."),
    ) -> None:
        """Serve a web study's page (the study page: consent, headphone check, clips) until Ctrl-C."""
        if not 0 <= port <= 65535:
            raise usage_error(f"{port}: give 0 to 65535", "--port")
        if workers < 1:
            raise usage_error(f"{workers}: give 1 or more", "--workers")
        from web.server import require_web_extra

        require_web_extra()
        from web import server

        context = app_context(ctx)
        require_project(context.db)
        store = context.store()

        def warm(clip_ids: list[int]) -> None:
            from workbench.audio.blind_audio import default_cache_dir, warm_cache

            result = run_task(f"Preparing the audio of {len(clip_ids)} clips",
                              lambda task: warm_cache(store, clip_ids, default_cache_dir(), task))
            if result.failures:
                say(f"{len(result.failures)} of {len(clip_ids)} clips could not be prepared; their items will "
                    "answer an error until their audio is linked (aglw media link)")

        def ready(line: server.Ready) -> None:
            if context.json:
                sys.stdout.write(json.dumps({"url": line.url, "study": line.study, "mode": line.mode}) + "\n")
            else:
                sys.stdout.write(f"Serving web study {line.study} ({line.mode} mode) at {line.url} — Ctrl-C stops\n")
            sys.stdout.flush()

        server.serve(store, context.db, name, host=host, port=port, workers=workers,
                     secure_cookies=secure_cookies, proxy_headers=proxy_headers, warm=warm, on_ready=ready)
