"""Where a clip's recording is: the one rule, for the CLI, ``fetch-audio``, import and the GUI.

A clip *has audio* when its ``audio_path`` (relative to one of its dataset's media roots)
names a file that exists there. Nothing else counts: views, tagging and analysis never guess
from ``mp3name`` on their own, so the CLI and the GUI cannot disagree about a clip.

Finding the file of a clip that has none (or whose file moved) is :func:`link_media`: it
looks under the media roots, in this order, and stops at the first tier that finds anything:

1. the stored ``audio_path`` (a file that came back);
2. the dataset's audio path as written: ``<root>/<mp3name>`` or ``<root>/<key>/<mp3name>``
   (the layout ``fetch-audio`` writes);
3. a file named ``<mp3name>`` anywhere below a root;
4. a file whose stem is the clip key (``<key>.mp3``, ``<key>.wav``…) anywhere below a root.

Two different files in the winning tier make the clip *ambiguous*: nothing is linked and
both are reported, because guessing would put the wrong recording under a label.
"""

from __future__ import annotations

import functools
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from sqlalchemy import select

from storage import Store
from storage import tables as T
from workbench.errors import InputError
from workbench.tasks import TaskCancelled, TaskContext

AUDIO_SUFFIXES = frozenset(
    {".mp3", ".wav", ".flac", ".ogg", ".oga", ".opus", ".m4a", ".aac", ".aif", ".aiff", ".wv", ".caf", ".w64"}
)

AudioState = Literal["ok", "missing", "unlinked"]


@dataclass(frozen=True)
class AudioStatus:
    """What the store says about one clip's recording, checked against the disk."""

    state: AudioState
    path: Path | None  # the file when ``ok``; the last known location when ``missing``
    stored: str | None  # ``audio_path`` as stored
    message: str | None = None  # why there is no audio, in words, with what to do

    @property
    def ok(self) -> bool:
        return self.state == "ok"


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def _resolved_roots(roots: Iterable[Path | str]) -> list[Path]:
    return list(_resolve_all(tuple(str(root) for root in roots)))


@functools.lru_cache(maxsize=256)
def _resolve_all(roots: tuple[str, ...]) -> tuple[Path, ...]:
    # A pool's clips share a few roots: resolve each set once, not once per clip (100,000
    # clips would cost 100,000 rounds of symlink lookups in `clips list` and `media link`).
    return tuple(Path(root).expanduser().resolve() for root in roots)


def clip_audio(key: str, audio_path: str | None, roots: Sequence[Path | str]) -> AudioStatus:
    """The recording of a clip by the one rule (see the module doc); never raises for a missing file."""
    if not audio_path:
        return AudioStatus("unlinked", None, None, f"clip {key} has no audio linked; put its recording under a "
                           "media root and run `aglw media link` (GUI: Project ▸ Link audio…)")
    resolved_roots = _resolved_roots(roots)
    if "\x00" in audio_path:
        return AudioStatus("missing", None, audio_path, f"clip {key}: stored audio path contains a NUL byte")
    candidate = PurePosixPath(audio_path)
    attempts = [Path(candidate)] if candidate.is_absolute() else [root / candidate for root in resolved_roots]
    escaped = None
    for attempt in attempts:
        resolved = attempt.resolve()
        if not _inside(resolved, resolved_roots):
            escaped = resolved
        elif resolved.is_file():
            return AudioStatus("ok", resolved, audio_path)
    if resolved_roots and escaped is not None and all(not _inside(a.resolve(), resolved_roots) for a in attempts):
        # ``..`` or a symlink pointing out of the media roots: never read, whatever is there.
        return AudioStatus("missing", None, audio_path, f"clip {key}: stored audio path {audio_path!r} leads "
                           f"outside the media roots ({escaped}); refused")
    if not resolved_roots:
        return AudioStatus("missing", None, audio_path, f"clip {key}: its dataset has no media root; "
                           "run `aglw media link --root DIR`")
    last_known = attempts[0].resolve()
    return AudioStatus("missing", last_known, audio_path, f"clip {key}: recording not found at its last known "
                       f"path {last_known}; if it moved, run `aglw media link` (with --root for a new folder)")


class MediaIndex:
    """One walk of the media roots: every audio file by name and by stem.

    Built once per link run, so 100,000 clips cost one directory walk, not 100,000 searches.
    """

    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots = _resolved_roots(roots)
        self.by_name: dict[str, list[Path]] = defaultdict(list)
        self.by_stem: dict[str, list[Path]] = defaultdict(list)
        for root in self.roots:
            if not root.is_dir():
                continue
            for folder, dirs, files in os.walk(root):
                dirs.sort()  # a stable order in reports
                for name in sorted(files):
                    path = Path(folder) / name
                    if path.suffix.lower() not in AUDIO_SUFFIXES:
                        continue
                    self.by_name[name].append(path)
                    self.by_stem[path.stem].append(path)

    def _direct(self, relative: str) -> list[Path]:
        found = []
        for root in self.roots:
            path = (root / relative).resolve()
            if path.is_relative_to(root) and path.is_file():
                found.append(path)
        return found

    def find(self, key: str, mp3name: str | None, stored: str | None = None) -> list[Path]:
        """The files of the first tier that finds anything (see the module doc), duplicates removed."""
        tiers: list[list[Path]] = []
        if stored:
            tiers.append(self._direct(stored))
        if mp3name:
            tiers.append(self._direct(mp3name) + self._direct(f"{key}/{mp3name}"))
            tiers.append(list(self.by_name.get(PurePosixPath(mp3name).name, ())))
        tiers.append(list(self.by_stem.get(key, ())))
        for tier in tiers:
            files = list(dict.fromkeys(p.resolve() for p in tier))
            if files:
                return files
        return []

    def relative(self, path: Path) -> tuple[Path, str]:
        """The root holding ``path`` and the path relative to it (as stored in ``audio_path``)."""
        for root in self.roots:
            if path.is_relative_to(root):
                return root, path.relative_to(root).as_posix()
        raise ValueError(f"{path} is under no media root")


@dataclass
class LinkReport:
    """What ``media link`` did (or would do, on a dry run)."""

    dry_run: bool
    roots: list[str]
    already: int = 0
    linked: list[dict] = field(default_factory=list)  # {key, path, root, previous}
    missing: list[dict] = field(default_factory=list)  # {key, mp3name, last_known}
    ambiguous: list[dict] = field(default_factory=list)  # {key, candidates}
    added_roots: list[dict] = field(default_factory=list)  # {dataset, path}

    def as_dict(self) -> dict:
        return {
            "dry_run": self.dry_run, "roots": self.roots, "already": self.already, "linked": self.linked,
            "missing": self.missing, "ambiguous": self.ambiguous, "added_roots": self.added_roots,
        }


def dataset_roots(store: Store) -> dict[int, list[Path]]:
    """Dataset id → its media roots, in the order they were added."""
    roots: dict[int, list[Path]] = defaultdict(list)
    with store.read() as connection:
        for dataset_id, path in connection.execute(
            select(T.media_root.c.dataset_id, T.media_root.c.path).order_by(T.media_root.c.id)
        ):
            roots[dataset_id].append(Path(path))
    return roots


def link_media(
    store: Store, *, root: Path | str | None = None, dry_run: bool = False, task: TaskContext | None = None
) -> LinkReport:
    """Find and record the audio of every clip that has none, or whose file is gone.

    Parameters
    ----------
    root
        A folder to search besides the datasets' media roots; it becomes a media root of each
        dataset that gets a clip linked from it (not on a dry run).
    dry_run
        Report what would be linked; write nothing.
    task
        Progress and cancel: each clip looked at is one item (a clip left missing or ambiguous
        is listed in the report, not a failed item). A cancel stores the links found so far,
        then raises :class:`~workbench.tasks.TaskCancelled`; linking again goes on from there.

    Raises
    ------
    InputError
        ``root`` is not a folder, or no dataset has a media root and none was given.
    """
    extra: Path | None = None
    if root is not None:
        extra = Path(root).expanduser().resolve()
        if not extra.is_dir():
            raise InputError(f"{root}: not a folder; give the folder that holds the recordings")
    known = dataset_roots(store)
    with store.read() as connection:
        datasets = dict(connection.execute(select(T.dataset.c.id, T.dataset.c.name)).all())
        clips = connection.execute(select(T.clip).order_by(T.clip.c.id)).all()
    if extra is None and not any(known.values()) and clips:
        raise InputError("no dataset has a media root: run `aglw media link --root DIR` with the folder "
                         "that holds the recordings")
    report = LinkReport(dry_run=dry_run, roots=sorted({str(p) for ps in known.values() for p in ps}
                                                      | ({str(extra)} if extra else set())))
    indexes: dict[tuple[Path, ...], MediaIndex] = {}
    updates: dict[int, str] = {}
    new_roots: set[int] = set()
    task = task or TaskContext()
    task.set_total(len(clips))
    cancelled = False
    for clip in clips:
        _link_one(clip, known, extra, indexes, report, updates, new_roots)
        try:
            task.item_done(clip.key)
        except TaskCancelled:
            # The links found so far are stored below; a later run skips those clips.
            cancelled = True
            break
    report.added_roots = [{"dataset": datasets.get(d, str(d)), "path": str(extra)} for d in sorted(new_roots)]
    if not dry_run and (updates or new_roots):
        _store_links(store, extra, updates, new_roots)
    if cancelled:
        raise TaskCancelled()
    return report


def _link_one(clip: Any, known: dict[int, list[Path]], extra: Path | None, indexes: dict[tuple[Path, ...], MediaIndex],
              report: LinkReport, updates: dict[int, str], new_roots: set[int]) -> None:
    """Look for one clip's file and note the outcome in ``report`` (and ``updates``, ``new_roots``)."""
    own = _resolved_roots(known.get(clip.dataset_id, []))
    roots = own + ([extra] if extra is not None and extra not in own else [])
    status = clip_audio(clip.key, clip.audio_path, roots)
    if status.ok and status.path is not None and _inside(status.path, own):
        report.already += 1
        return
    index = indexes.get(tuple(roots))
    if index is None:
        index = indexes[tuple(roots)] = MediaIndex(roots)
    files = index.find(clip.key, clip.mp3name, clip.audio_path)
    if len(files) > 1:
        report.ambiguous.append({"key": clip.key, "candidates": [str(p) for p in files]})
        return
    if not files:
        report.missing.append({"key": clip.key, "mp3name": clip.mp3name,
                               "last_known": str(status.path) if status.path else None})
        return
    found_root, relative = index.relative(files[0])
    updates[int(clip.id)] = relative  # type: ignore[arg-type]
    report.linked.append({"key": clip.key, "path": str(files[0]), "root": str(found_root),
                          "previous": clip.audio_path})
    if extra is not None and found_root == extra and extra not in own:
        new_roots.add(clip.dataset_id)


def _store_links(store: Store, extra: Path | None, updates: dict[int, str], new_roots: set[int]) -> None:
    from storage.models import Clip, MediaRoot

    with store.write() as s:
        for dataset_id in new_roots:
            s.add(MediaRoot(dataset_id=dataset_id, path=str(extra)))
        for clip_id, relative in updates.items():
            row = s.get(Clip, clip_id)
            if row is None:
                continue
            if row.audio_path != relative:
                # A different file: what analysis stored about the old one no longer holds.
                row.content_hash = None
            row.audio_path = relative
            s.add(row)


def audio_statuses(store: Store, clip_ids: Iterable[int] | None = None) -> dict[int, AudioStatus]:
    """Clip id → :class:`AudioStatus` for the given clips (all when None)."""
    roots = dataset_roots(store)
    clip = T.clip.c
    with store.read() as connection:
        query = select(clip.id, clip.key, clip.audio_path, clip.dataset_id)
        if clip_ids is not None:
            query = query.where(clip.id.in_(list(clip_ids)))
        rows = connection.execute(query).all()
    return {int(cid): clip_audio(key, path, roots.get(ds, [])) for cid, key, path, ds in rows}
