"""The table `aglw --help` lists commands from (cli/registry.py) matches what the modules register,
and a command imports only its own module (the rest of the CLI stays unloaded: start-up, P11)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from cli.registry import COMMANDS, MODULES

REPO = Path(__file__).resolve().parents[2]


def _registered(module_name: str) -> dict[str, str]:
    holder = typer.Typer()
    holder.callback()(lambda: None)
    importlib.import_module(f"cli.{module_name}").register(holder)
    commands = typer.main.get_group(holder).commands
    return {name: (c.short_help or c.help or "").strip().split("\n\n")[0].replace("\n", " ") for name, c in commands.items()}


@pytest.mark.parametrize("module_name", MODULES)
def test_the_registry_lists_exactly_what_each_module_registers(module_name: str) -> None:
    listed = {name: line for name, module, line in COMMANDS if module == module_name}
    assert listed == _registered(module_name), (
        f"cli/registry.py disagrees with cli/{module_name}.register: update the table"
    )


def test_every_command_module_is_in_the_registry() -> None:
    on_disk = {p.stem for p in (REPO / "cli").glob("*_cmds.py")}
    assert on_disk == set(MODULES)
    names = [name for name, _, _ in COMMANDS]
    assert len(names) == len(set(names)), "a command name is listed twice"


def _loaded_after(argv: list[str]) -> list[str]:
    code = (
        "import sys\n"
        "from cli.main import main\n"
        f"code = main({argv!r})\n"
        "print(code, ','.join(sorted(m for m in sys.modules if m.startswith('cli.') and m.endswith('_cmds'))))\n"
    )
    env = {**os.environ, "COLUMNS": "100"}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    status, _, loaded = result.stdout.strip().splitlines()[-1].partition(" ")
    assert status == "0", result.stdout
    return [m for m in loaded.split(",") if m]


def test_help_loads_no_command_module_and_a_command_only_its_own() -> None:
    assert _loaded_after(["--help"]) == []
    assert _loaded_after(["clips", "--help"]) == ["cli.clips_cmds"]
    assert _loaded_after(["--json", "alm", "--help"]) == ["cli.alm_cmds"]


def test_help_lists_every_command_with_its_line(capsys) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main

    assert main(["--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    for name, _, line in COMMANDS:
        assert name in shown
        assert " ".join(line.split()[:4]) in shown


def test_a_mistyped_command_is_still_offered_the_right_one(capsys) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main

    assert main(["clip", "list"]) == 2
    assert "Did you mean 'clips'" in capsys.readouterr().err
