"""Where a command may write a file or a folder: the one place that decides (issue 28).

Every command that writes what the user named (``--out``, an export's ``OUT``) goes through
here, so the rules hold everywhere:

* an existing target is replaced only with ``force`` (``--force``);
* the folder it goes into must exist: a mistyped folder in ``--out`` is refused, not made;
* a symbolic link as the target is never followed: with ``force`` the link itself is replaced
  (what it points to is left as it was), and a dangling link is refused, since writing "through"
  it would create a file somewhere else;
* the content is written to a temporary name beside the target, flushed to disk (fsync) and
  renamed into place, so a crash, a full disk or a refused write leaves the target as it was;
* a failure of the machine (full disk, read-only folder) is one :class:`~workbench.errors.AglwError`
  naming the target, never a traceback.

Folders (a report, a bundle) are built in a staging folder beside the target and swapped in
whole; a non-empty folder is replaced only when it holds an earlier output of the same kind
(``earlier``) and ``force`` is given: a folder of the user's own files is never emptied.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from workbench.errors import AglwError

# What to do about the errors a disk gives, by errno (the rest: the system's own words).
_DISK_HINTS = {
    errno.ENOSPC: "the disk is full: free some space and retry",
    errno.EDQUOT: "the disk quota is exhausted: free some space and retry",
    errno.EROFS: "the file system is read-only: choose another place",
    errno.EACCES: "permission denied: choose a folder you may write to",
    errno.EPERM: "permission denied: choose a folder you may write to",
}


class OutputError(AglwError):
    """A target refused, or a write that failed; nothing was written to the target."""


def _link_text(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def write_failed(path: Path, exc: OSError) -> OutputError:
    """The one-line error of a write to ``path`` that the machine refused."""
    reason = _DISK_HINTS.get(exc.errno or 0, exc.strerror or str(exc))
    return OutputError(f"{path}: cannot write it ({reason}); nothing was written there")


def _check_parent(path: Path) -> None:
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise OutputError(f"{path}: {parent} is a file, not a folder; choose another path")
    if not parent.exists():
        raise OutputError(f"{path}: the folder {parent} does not exist; create it first, or choose another path")


def check_file_target(path: str | Path, *, force: bool) -> Path:
    """``path`` as a Path when a file may be written there, else an :class:`OutputError`.

    Refuses a dangling symbolic link, a folder, a missing parent folder and (without ``force``)
    anything that exists, a link to an existing file included.
    """
    path = Path(path)
    if path.is_symlink():
        if not path.exists():
            raise OutputError(f"{path} is a symbolic link to {_link_text(path)}, which does not exist; "
                              "remove the link or choose another path (a link is never written through)")
        if not force:
            raise OutputError(f"{path} exists (a symbolic link to {_link_text(path)}); pass --force to "
                              "replace the link itself (what it points to is left alone), or choose another path")
        return path
    if path.is_dir():
        raise OutputError(f"{path} is a folder; give the name of a file to write")
    if path.exists() and not force:
        raise OutputError(f"{path} exists; pass --force to replace it, or choose another path")
    _check_parent(path)
    return path


def check_file_targets(paths: list[Path], *, force: bool) -> None:
    """:func:`check_file_target` for every file one command writes, before it writes any."""
    for path in paths:
        check_file_target(path, force=force)


def _fsync_path(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _fsync_folder(folder: Path) -> None:
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:  # a platform without directory handles: the rename is as durable as it gets
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def _beside(path: Path, suffix: str, *, folder: bool) -> Path:
    """A new temporary file or folder next to ``path``, with the permissions the user's umask
    gives a new file (tempfile's are private: an export would end up readable by its owner only)."""
    for _ in range(100):
        candidate = path.parent / f".{path.name}.{secrets.token_hex(4)}.part{suffix}"
        try:
            if folder:
                os.mkdir(candidate, 0o777)
            else:
                os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:
            continue
        except OSError as exc:
            raise write_failed(path, exc) from exc
        return candidate
    raise OutputError(f"{path}: no free temporary name beside it; remove the .{path.name}.*.part entries there")


def _place(temporary: Path, path: Path, *, force: bool) -> None:
    """Move the finished ``temporary`` to ``path`` (never through a link at ``path``)."""
    if not force:
        # A hard link fails if anything (a file, a link) took the name meanwhile: no clobbering.
        try:
            os.link(temporary, path)
        except FileExistsError as exc:
            raise OutputError(f"{path} appeared while it was being written; nothing was replaced") from exc
        except OSError:  # a file system without hard links: check, then rename
            check_file_target(path, force=False)
            os.replace(temporary, path)
        else:
            temporary.unlink()
        return
    check_file_target(path, force=True)
    os.replace(temporary, path)  # replaces a link itself, not the file it points to


@contextmanager
def output_file(path: str | Path, *, force: bool, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write; on success it becomes ``path``.

    The target is checked before the caller starts (so a refused target costs no work) and
    again at the end. ``suffix`` keeps the extension a writer may look at (``.png``).
    """
    path = check_file_target(path, force=force)
    temporary = _beside(path, suffix, folder=False)
    try:
        yield temporary
        _fsync_path(temporary)
        _place(temporary, path, force=force)
        _fsync_folder(path.parent)
    except OSError as exc:
        raise write_failed(path, exc) from exc
    finally:
        temporary.unlink(missing_ok=True)


def write_text(path: str | Path, text: str, *, force: bool) -> Path:
    """Write ``text`` (UTF-8, line endings as given) to ``path`` by the rules of this module."""
    path = Path(path)
    with output_file(path, force=force) as temporary, open(temporary, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    return path


def write_bytes(path: str | Path, data: bytes, *, force: bool) -> Path:
    """Write ``data`` to ``path`` by the rules of this module."""
    path = Path(path)
    with output_file(path, force=force) as temporary:
        temporary.write_bytes(data)
    return path


# ----------------------------------------------------------------------------------- folders


def check_folder_target(path: str | Path, *, force: bool, earlier: Callable[[Path], bool] | None = None,
                        what: str = "output") -> Path:
    """``path`` as a Path when a folder of ``what`` may be written there, else an :class:`OutputError`.

    A new or empty folder is fine (in a folder that exists). A non-empty one is replaced only
    when ``earlier(path)`` says it holds an earlier ``what`` (and nothing else) and ``force`` is given. A symbolic link is
    refused when dangling and, without ``force``, always; with ``force`` the link itself is
    replaced by the new folder.
    """
    path = Path(path)
    if path.is_symlink():
        if not path.exists():
            raise OutputError(f"{path} is a symbolic link to {_link_text(path)}, which does not exist; "
                              "remove the link or choose another folder (a link is never written through)")
        if not force:
            raise OutputError(f"{path} is a symbolic link to {_link_text(path)}; pass --force to replace the "
                              "link itself by the new folder (what it points to is left alone), or choose another folder")
        return path
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path} is a file; choose a new or empty folder for the {what}")
    if path.is_dir() and any(path.iterdir()):
        if earlier is None or not earlier(path):
            hint = f" (--force replaces only an earlier {what})" if earlier is not None else ""
            raise OutputError(f"{path} is not empty; choose a new or empty folder for the {what}{hint}")
        if not force:
            raise OutputError(f"{path} holds an earlier {what}; pass --force to replace it, or choose a new folder")
    _check_parent(path)
    return path


def _fsync_tree(folder: Path) -> None:
    for item in folder.rglob("*"):
        if item.is_file() and not item.is_symlink():
            _fsync_path(item)
    for item in [folder, *(p for p in folder.rglob("*") if p.is_dir() and not p.is_symlink())]:
        _fsync_folder(item)


def _swap_in(staging: Path, path: Path) -> None:
    """Put the finished ``staging`` folder at ``path``; the earlier content stays whole until then."""
    if path.is_symlink():
        path.unlink()  # the link itself, never what it points to
    elif path.exists():
        earlier = path.parent / f".{path.name}.earlier-{os.getpid()}"
        shutil.rmtree(earlier, ignore_errors=True)
        path.rename(earlier)
        try:
            staging.rename(path)
        except OSError:
            earlier.rename(path)
            raise
        shutil.rmtree(earlier, ignore_errors=True)
        return
    staging.rename(path)


@contextmanager
def output_folder(path: str | Path, *, force: bool, earlier: Callable[[Path], bool] | None = None,
                  what: str = "output") -> Iterator[Path]:
    """Yield a staging folder beside ``path`` to fill; on success it becomes ``path``.

    See :func:`check_folder_target` for what is refused; the check runs before the caller
    starts and again before the swap (the folder may have been filled meanwhile).
    """
    # absolute, so that "." has a name and a parent to stage beside (links are not resolved)
    path = check_folder_target(Path(os.path.abspath(path)), force=force, earlier=earlier, what=what)
    staging = _beside(path, "", folder=True)
    try:
        yield staging
        _fsync_tree(staging)
        check_folder_target(path, force=force, earlier=earlier, what=what)
        _swap_in(staging, path)
        _fsync_folder(path.parent)
    except OSError as exc:
        raise write_failed(path, exc) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


__all__ = [
    "OutputError", "check_file_target", "check_file_targets", "check_folder_target", "output_file",
    "output_folder", "write_bytes", "write_failed", "write_text",
]
