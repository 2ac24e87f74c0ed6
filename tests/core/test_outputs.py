"""Where a command may write (workbench/outputs.py): existing targets, symbolic links, atomic writes."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from workbench import outputs
from workbench.outputs import OutputError


def test_a_new_file_is_written_and_an_existing_one_needs_force(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.csv"
    target.parent.mkdir()
    outputs.write_text(target, "a\n", force=False)
    assert target.read_text() == "a\n"
    with pytest.raises(OutputError, match="exists; pass --force"):
        outputs.write_text(target, "b\n", force=False)
    assert target.read_text() == "a\n"
    outputs.write_text(target, "b\n", force=True)
    assert target.read_text() == "b\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.csv"]  # no temporary left


def test_a_missing_parent_folder_is_refused(tmp_path: Path) -> None:
    """A typo in a folder name (``--out /tmp/reprots/x.png``) is refused, not made into a tree of
    folders (a caller that lays out folders of its own makes them first)."""
    target = tmp_path / "no" / "such" / "out.csv"
    for attempt in (lambda: outputs.check_file_target(target, force=False),
                    lambda: outputs.write_text(target, "a\n", force=True),
                    lambda: outputs.check_folder_target(tmp_path / "no" / "bundle", force=False)):
        with pytest.raises(OutputError, match=r"the folder .*no.* does not exist; create it"):
            attempt()
    assert list(tmp_path.iterdir()) == []
    target.parent.mkdir(parents=True)
    outputs.write_bytes(target, b"a", force=False)
    assert target.read_bytes() == b"a"


def test_a_link_is_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("precious")
    folder = tmp_path / "folder"
    folder.mkdir()
    link = folder / "out.txt"
    link.symlink_to(victim)
    with pytest.raises(OutputError, match="symbolic link"):
        outputs.write_text(link, "x", force=False)
    outputs.write_text(link, "new", force=True)
    assert victim.read_text() == "precious"
    assert not link.is_symlink() and link.read_text() == "new"


def test_a_dangling_link_is_refused_even_with_force(tmp_path: Path) -> None:
    link = tmp_path / "out.png"
    link.symlink_to(tmp_path / "elsewhere" / "made.png")
    for force in (False, True):
        with pytest.raises(OutputError, match="does not exist"):
            outputs.write_bytes(link, b"x", force=force)
    assert not (tmp_path / "elsewhere").exists() and link.is_symlink()


def test_a_folder_is_not_a_file_target(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="is a folder"):
        outputs.write_text(tmp_path, "x", force=True)


def test_a_failed_write_keeps_the_target_and_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError) as caught:
        with outputs.output_file(target, force=True) as temporary:
            temporary.write_text("half")
            full()
    message = str(caught.value)
    assert "\n" not in message and "disk is full" in message and str(target) in message
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_without_force_a_file_that_appears_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    with pytest.raises(OutputError, match="appeared"):
        with outputs.output_file(target, force=False) as temporary:
            temporary.write_text("mine")
            target.write_text("theirs")
    assert target.read_text() == "theirs"


def _ours(folder: Path) -> bool:
    return (folder / "report.html").exists() and all(p.name in {"report.html", "tables"} for p in folder.iterdir())


def test_folder_rules(tmp_path: Path) -> None:
    out = tmp_path / "report"
    with outputs.output_folder(out, force=False, earlier=_ours, what="report") as staging:
        (staging / "report.html").write_text("one")
    assert (out / "report.html").read_text() == "one"
    with pytest.raises(OutputError, match="earlier report; pass --force"):
        outputs.check_folder_target(out, force=False, earlier=_ours, what="report")
    with outputs.output_folder(out, force=True, earlier=_ours, what="report") as staging:
        (staging / "report.html").write_text("two")
    assert (out / "report.html").read_text() == "two"
    (out / "mine.txt").write_text("user file")
    with pytest.raises(OutputError, match="not empty"):
        outputs.check_folder_target(out, force=True, earlier=_ours, what="report")
    empty = tmp_path / "empty"
    empty.mkdir()
    with outputs.output_folder(empty, force=False, what="report") as staging:
        (staging / "a").write_text("a")
    assert (empty / "a").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "report"]


def test_a_linked_folder_is_replaced_as_a_link_and_a_dangling_one_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "sensitivity.csv").write_text("theirs")
    link = tmp_path / "out"
    link.symlink_to(outside, target_is_directory=True)
    with pytest.raises(OutputError, match="symbolic link"):
        outputs.check_folder_target(link, force=False, what="sweep")
    with outputs.output_folder(link, force=True, what="sweep") as staging:
        (staging / "sensitivity.csv").write_text("ours")
    assert (outside / "sensitivity.csv").read_text() == "theirs"
    assert not link.is_symlink() and (link / "sensitivity.csv").read_text() == "ours"
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputError, match="does not exist"):
        outputs.check_folder_target(dangling, force=True, what="sweep")


def test_a_failed_folder_leaves_the_earlier_one_and_no_staging(tmp_path: Path) -> None:
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.html").write_text("earlier")
    with pytest.raises(OutputError, match="read-only"):
        with outputs.output_folder(out, force=True, earlier=_ours, what="report") as staging:
            (staging / "report.html").write_text("half")
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    assert (out / "report.html").read_text() == "earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_outputs_get_the_permissions_of_any_new_file(tmp_path: Path) -> None:
    """Not the private 0600/0700 of a temporary file: an export is shared like any file the user makes."""
    umask = os.umask(0o022)
    os.umask(umask)
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    written = outputs.write_text(tmp_path / "out.txt", "x", force=False)
    with outputs.output_folder(tmp_path / "folder", force=False) as staging:
        (staging / "a.txt").write_text("a")
    assert written.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777 == 0o666 & ~umask
    assert (tmp_path / "folder").stat().st_mode & 0o777 == 0o777 & ~umask
