"""Every command's --help renders its texts as written (issue 30): a flag shows no type
("--json <bool>"), no raw reST (``--dir``), and no bracketed word is swallowed as markup
("extra )" where the text says "extra [scale])"."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from cli.main import app, main
from cli.registry import COMMANDS
from tests.cli_helpers import command_tree


def _walk(command, path: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    # typer ships its own copy of click: the tree is read by duck typing, not isinstance
    yield path, command
    if hasattr(command, "list_commands"):
        context = command.context_class(command)
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            if sub is not None:
                yield from _walk(sub, (*path, name))


def _every_command() -> list[tuple[tuple[str, ...], object]]:
    root = command_tree()
    return [(path, command) for path, command in _walk(root) if path]


def _flat(text: str) -> str:
    """The help without box drawing and line wrapping (words joined by single spaces)."""
    return " ".join(re.sub(r"[│╭╮╰╯─*]", " ", text).split())


def test_every_registered_command_is_walked() -> None:
    walked = {path[0] for path, _ in _every_command()}
    assert walked == {name for name, _, _ in COMMANDS}


@pytest.mark.parametrize("path", [path for path, _ in _every_command()], ids=" ".join)
def test_help_renders_as_written(path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="aglw")
    assert result.exit_code == 0, result.output
    shown = _flat(result.output)
    assert "<bool>" not in shown, "a flag is shown with a type"
    assert "``" not in shown, "raw reST in the help"
    command = dict(_every_command())[path]
    for param in command.params:
        text = getattr(param, "help", None) or ""
        for bracketed in re.findall(r"\[[^\]\[]+\]", text):
            assert bracketed in shown, f"{'/'.join(param.opts)}: {bracketed} was swallowed"


def test_the_demo_help_shows_its_option_names_as_code_not_rest(capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["demo", "--help"]) == 0
    out = _flat(capsys.readouterr().out)
    assert "An existing demo project in --dir is opened" in out
    assert main(["analyze-pool", "--help"]) == 0
    assert "extra [scale]" in _flat(capsys.readouterr().out)


@pytest.mark.parametrize("path", [path for path, _ in _every_command()], ids=" ".join)
def test_every_option_name_is_shown_whole_in_an_80_column_terminal(path: tuple[str, ...],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`aglw study web --help` in an 80-column terminal cut "--exclude-failed-he…": a name one
    cannot read cannot be typed. Every option name (both of a flag pair) is there whole."""
    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="aglw")
    assert result.exit_code == 0, result.output
    words = set(re.findall(r"--?[\w-]+", result.output))
    command = dict(_every_command())[path]
    names = [name for param in command.params if not getattr(param, "hidden", False)
             for name in (*param.opts, *getattr(param, "secondary_opts", ())) if name.startswith("-")]
    assert [name for name in names if name not in words] == [], result.output
    # nor is any other word cut (a URL in an option's help was: "https://archive.org/download/…")
    written = " ".join([command.help or "", *(getattr(param, "help", None) or "" for param in command.params)])
    assert "…" not in result.output or "…" in written, result.output


def test_fetch_audio_help_names_the_default_source_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.audio.fetch import AGL1K_URL

    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(app, ["fetch-audio", "--help"], prog_name="aglw")
    assert AGL1K_URL in result.output
