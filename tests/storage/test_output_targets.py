"""Every command that writes a file or a folder the user names follows workbench/outputs.py (issue 28):
an existing target needs --force, a dangling symbolic link is refused, a link is never written
through (with --force the link itself is replaced). The commands are found by walking the CLI, so
a new output option fails here until it is listed below."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli.main import main
from tests.storage.studies_project import ALM, link_audio, populate
from tests.cli_helpers import command_tree

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")  # the off-screen screenshot

EVENTS = "0,0,0,10,5\n1,0,0,12,5\n2,0,0,14,5\n"


@dataclass(frozen=True)
class Output:
    kind: str  # "file" or "folder"
    argv: Callable[[str], list[str]]  # the command with OUT in its place (global options before it)
    suffix: str = ""
    needs: str | None = None  # a module the command needs (an optional extra)


OUTPUTS: dict[str, Output] = {
    "screenshot": Output("file", lambda out: ["screenshot", "--clip", "clip000", "--out", out, "--size", "400x300"],
                         ".png", needs="PySide6"),
    "study sensitivity": Output("folder", lambda out: ["study", "sensitivity", "--gamma", "500,1000", "--alpha", "0.1",
                                                       "--theta", "0.5", "--out", out]),
    "study progress": Output("file", lambda out: ["study", "progress", "--out", out], ".csv"),
    "study report": Output("folder", lambda out: ["study", "report", "--out", out, "--bootstrap", "0",
                                                  "--min-items", "5"]),
    "agreement": Output("folder", lambda out: ["agreement", "--out", out, "--bootstrap", "0"]),
    "export selection": Output("file", lambda out: ["export", "selection", out], ".csv"),
    "export predictions": Output("file", lambda out: ["export", "predictions", "--model", ALM, out], ".jsonl"),
    "export dataset": Output("folder", lambda out: ["export", "dataset", out, "--no-embed-audio"], needs="pyarrow"),
    "events export": Output("file", lambda out: ["--annotator", "ev", "events", "export", "--clip", "clip000", out],
                            ".csv"),
    "events qa": Output("file", lambda out: ["events", "qa", "--out", out], ".jsonl"),
}
# Options that name a place to write but are no single output (each says why).
NOT_OUTPUTS = {
    "fetch-audio": "--to is the download folder: it fills up across resumed runs, each file written by rename",
    "demo": "--dir holds the demo project: an existing one is reopened, --overwrite generates it afresh",
}


def _commands() -> Iterator[tuple[str, object]]:
    from cli.main import LazyGroup

    def walk(command, path):  # type: ignore[no-untyped-def]
        children = getattr(command, "commands", None)
        if not children:
            yield " ".join(path), command
            return
        for name in sorted(children):
            child = command.load(name) if isinstance(command, LazyGroup) else children[name]
            yield from walk(child, [*path, name])

    yield from walk(command_tree(), [])


def _writes_a_path(param) -> bool:  # type: ignore[no-untyped-def]
    help_text = (getattr(param, "help", None) or "").lower()
    return param.name in ("out", "to", "directory") or (param.name == "file" and re.search(r"\bwrite", help_text))


def test_every_command_that_writes_a_path_is_checked_here() -> None:
    found = {path for path, command in _commands() if any(_writes_a_path(p) for p in command.params)}
    assert found == set(OUTPUTS) | set(NOT_OUTPUTS)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> str:
    from storage import open_store

    base = tmp_path_factory.mktemp("outputs")
    db = base / "project.sqlite"
    store = open_store(db)
    populate(store)
    link_audio(store, base / "media", [f"clip{i:03d}" for i in range(10, 20)])  # a plan draws clips with audio
    from sqlmodel import select as select_rows

    from storage.models import Clip
    from workbench.curation.export import REQUIRED_NUMBERS

    with store.write() as s:  # the AGL1K export needs every number of its format
        for clip in s.exec(select_rows(Clip)).all():
            for name in REQUIRED_NUMBERS:
                if getattr(clip, name) is None:
                    setattr(clip, name, 1.0)
            s.add(clip)
    store.dispose()
    events = base / "clip000.csv"
    events.write_text(EVENTS, encoding="utf-8")
    for argv in (["select", "--size", "8"],
                 ["study", "plan", "--name", "p", "--annotators", "ada,bea", "--overlap", "1"],
                 ["--annotator", "ev", "events", "import", "--clip", "clip000", str(events)]):
        assert main(["--db", str(db), *argv]) == 0, argv
    return str(db)


def _run(capsys: pytest.CaptureFixture[str], db: str, spec: Output, out: Path, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    argv = spec.argv(str(out))
    globals_ = argv[:2] if argv[0] == "--annotator" else []
    rc = main(["--db", db, *globals_, *argv[len(globals_):], *extra])
    return rc, capsys.readouterr().err


def _one_line(err: str, out: Path) -> str:
    lines = err.strip().splitlines()
    errors = [line for line in lines if line.startswith("aglw: error")]
    assert errors == lines[-1:], err  # progress notes may come first; the error is one last line
    assert str(out) in errors[0], err
    return errors[0]


def _precious(path: Path, kind: str) -> dict[str, bytes]:
    """Put user data at ``path`` (a file, or a folder with a file) and return it for comparison."""
    if kind == "file":
        path.write_bytes(b"precious")
    else:
        path.mkdir()
        (path / "mine.txt").write_bytes(b"precious")
    return _content(path)


def _content(path: Path) -> dict[str, bytes]:
    if path.is_file():
        return {"": path.read_bytes()}
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(params=sorted(OUTPUTS))
def output(request: pytest.FixtureRequest) -> tuple[str, Output]:
    spec = OUTPUTS[request.param]
    if spec.needs:
        pytest.importorskip(spec.needs, reason=f"{request.param} needs {spec.needs}")
    return request.param, spec


def test_an_existing_target_is_refused_without_force(project: str, output, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    name, spec = output
    out = tmp_path / f"target{spec.suffix}"
    before = _precious(out, spec.kind)
    rc, err = _run(capsys, project, spec, out)
    assert rc == 1, err
    line = _one_line(err, out)
    assert "--force" in line or "not empty" in line
    assert _content(out) == before
    if spec.kind == "folder":  # a folder of the user's own files is never emptied, --force or not
        rc, err = _run(capsys, project, spec, out, "--force")
        assert rc == 1 and "not empty" in _one_line(err, out)
        assert _content(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # nothing staged beside it


def test_a_missing_parent_folder_is_refused(project: str, output, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A mistyped folder in OUT is not made (issue 40: `screenshot --out /nonexistent/dir/x.png` made it)."""
    name, spec = output
    out = tmp_path / "no" / "such" / f"target{spec.suffix}"
    for extra in ([], ["--force"]):
        rc, err = _run(capsys, project, spec, out, *extra)
        assert rc == 1, err
        assert "does not exist; create it" in _one_line(err, out)
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("force", [False, True])
def test_a_dangling_link_is_refused(project: str, output, tmp_path: Path, capsys, force: bool) -> None:  # type: ignore[no-untyped-def]
    name, spec = output
    elsewhere = tmp_path / "elsewhere" / f"made{spec.suffix}"
    out = tmp_path / f"link{spec.suffix}"
    out.symlink_to(elsewhere)
    rc, err = _run(capsys, project, spec, out, *(["--force"] if force else []))
    assert rc == 1, err
    assert "does not exist" in _one_line(err, out)
    assert not (tmp_path / "elsewhere").exists() and out.is_symlink()


def test_with_force_a_link_is_replaced_never_written_through(project: str, output, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    name, spec = output
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / f"victim{spec.suffix}"
    before = _precious(victim, spec.kind)
    folder = tmp_path / "here"
    folder.mkdir()
    out = folder / f"link{spec.suffix}"
    out.symlink_to(victim, target_is_directory=spec.kind == "folder")
    rc, err = _run(capsys, project, spec, out)
    assert rc == 1 and "--force" in _one_line(err, out)  # without --force: it exists
    rc, err = _run(capsys, project, spec, out, "--force")
    assert rc == 0, err
    assert _content(victim) == before  # what the link pointed to is untouched
    assert not out.is_symlink() and out.exists()
    assert (out.is_dir() if spec.kind == "folder" else out.is_file() and out.stat().st_size > 0)
