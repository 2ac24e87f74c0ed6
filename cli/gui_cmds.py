"""`aglw` commands: gui, screenshot, demo.

The CLI sits above ``ui/`` (layers cli -> ui -> workbench -> storage); Qt is imported inside
the commands that open a window, so `aglw --help` and every other command start without it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import typer

from cli.context import app_context, emit_json, require_project, say, show, usage_error


# Every view: the review window, each cockpit view, the review window with the Events dock or the
# Error modes tab in front, and guess mode on the map (ui/screenshot.py renders each).
SCREENSHOT_VIEWS = ("review", "curation", "selection", "map", "leaderboard", "agreement", "jobs", "team",
                    "events", "error-modes", "guess")


def _parse_size(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{2,5})\s*[xX×]\s*(\d{2,5})\s*", text)
    if not match:
        raise usage_error(f"must look like 1600x1000, got {text!r}", "--size")
    width, height = int(match.group(1)), int(match.group(2))
    if not (200 <= width <= 8000 and 200 <= height <= 8000):
        raise usage_error(f"{text}: width and height must lie between 200 and 8000 pixels", "--size")
    return width, height


def _ui_app():  # type: ignore[no-untyped-def]
    import ui.app  # Qt loads when a window is opened, not when `aglw` starts

    return ui.app


def _ui_screenshot():  # type: ignore[no-untyped-def]
    import ui.screenshot

    return ui.screenshot


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""

    @app.command("gui")
    def gui(
        ctx: typer.Context,
        clip: Optional[str] = typer.Option(None, "--clip", help="Open this clip key."),
        db: Optional[str] = typer.Option(
            None, "--db", help="Project database (path or URL); same as the global --db, which it overrides."
        ),
    ) -> None:
        """Open the desktop review workbench."""
        context = app_context(ctx)
        code = _ui_app().run_gui(require_project(db or context.db), context.annotator, clip_key=clip)
        raise typer.Exit(code)

    @app.command("screenshot")
    def screenshot(
        ctx: typer.Context,
        clip: str = typer.Option(..., "--clip", help="Key of the clip to open."),
        out: Path = typer.Option(..., "--out", help="PNG file to write."),
        size: str = typer.Option("1600x1000", "--size", help="Window size WxH."),
        view: str = typer.Option(
            "review", "--view", help="What to render: " + ", ".join(SCREENSHOT_VIEWS) + "."  # wraps at any width
        ),
        force: bool = typer.Option(False, "--force", help="Replace FILE if it exists."),
    ) -> None:
        """Render the main window with a clip open, off-screen, to a PNG."""
        context = app_context(ctx)
        width, height = _parse_size(size)
        from cli.context import check_choice

        check_choice(view, SCREENSHOT_VIEWS, "--view")
        path, (drawn_w, drawn_h) = _ui_screenshot().render_screenshot(
            require_project(context.db), clip, out, (width, height), annotator=context.annotator, view=view,
            overwrite=force,
        )
        if (drawn_w, drawn_h) != (width, height):
            # The JSON and the line name the picture's real size; this says why it differs.
            say(f"the {view} view cannot be {width}x{height}: its smallest size is {drawn_w}x{drawn_h}, "
                "so the picture has that size")
        if context.json:
            emit_json({"clip": clip, "out": str(path), "width": drawn_w, "height": drawn_h, "view": view,
                       "size_asked": [width, height]})
        else:
            show(f"wrote {path} ({drawn_w}x{drawn_h})")

    @app.command("demo")
    def demo(
        ctx: typer.Context,
        directory: Path = typer.Option(Path("demo-project"), "--dir", help="Where to write the demo project."),
        no_gui: bool = typer.Option(False, "--no-gui", help="Only generate it and print a summary."),
        overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing demo project there."),
    ) -> None:
        """Generate a demo project offline (synthetic DEMO data) and open the GUI on it.

        An existing demo project in ``--dir`` is opened as it is (your labels in it are kept);
        ``--overwrite`` generates it afresh.
        """
        from workbench.demo import DEMO_ANNOTATOR, DEMO_DB_NAME, create_demo_project

        context = app_context(ctx)
        existing = directory.expanduser().resolve() / DEMO_DB_NAME
        if existing.exists() and not overwrite:
            if context.json:
                emit_json({"db": str(existing), "reused": True, "demo": True})
            else:
                say(f"opening the existing DEMO project {existing} (pass --overwrite to generate it afresh)")
            if not no_gui:
                code = _ui_app().run_gui(str(existing), context.annotator or DEMO_ANNOTATOR)
                raise typer.Exit(code)
            return
        summary = create_demo_project(directory, overwrite=overwrite)
        payload = {
            "db": str(summary.db_path),
            "media_root": str(summary.media_root),
            "clips": list(summary.clip_keys),
            "layouts": list(summary.layouts),
            "judges": list(summary.judges),
            "curation_run_id": summary.curation_run_id,
            "reused": False,
            "demo": True,
        }
        if context.json:
            emit_json(payload)
        else:
            show(f"DEMO project written to {summary.db_path} ({len(summary.clip_keys)} synthetic clips: "
                f"{', '.join(summary.layouts)}; judges {', '.join(summary.judges)})")
        if not no_gui:
            code = _ui_app().run_gui(
                str(summary.db_path), context.annotator or DEMO_ANNOTATOR
            )
            raise typer.Exit(code)
