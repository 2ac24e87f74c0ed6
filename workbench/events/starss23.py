"""STARSS23 / DCASE Task 3 metadata CSV: read, validate, convert to events and back.

One file per recording, no header, rows ``frame,class,source,azimuth,elevation`` (DCASE 2023)
or ``frame,class,source,azimuth,elevation,distance`` (DCASE 2024, distance in cm). Frames are
100 ms indices; azimuth counter-clockwise from the front (+90 = left), elevation up, degrees.

Reading is all or nothing: the first bad row stops it with one line naming the file, the line
and the field. Events are the runs of consecutive frames of one (class, source) pair; writing
them back gives the same rows (export → import is exact).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import InputError
from workbench.strict_numbers import INT64_MAX, parse_float, parse_int
from workbench.events.model import (
    FRAME_S,
    STARSS23_CLASSES,
    SpatialEventData,
    frame_span,
    mirror_lateral,
)

COLUMNS_2023 = ("frame", "class", "source", "azimuth", "elevation")
# A distance beyond this (1,000 km in cm) is a broken value, not a sound source.
MAX_DISTANCE_CM = 1e8
COLUMNS_2024 = (*COLUMNS_2023, "distance")


@dataclass(frozen=True)
class MetadataRow:
    """One row of a metadata file (``line`` is its 1-based line number, 0 when generated)."""

    frame: int
    class_index: int
    source: int
    azimuth: float
    elevation: float
    distance: float | None = None
    line: int = 0


@dataclass(frozen=True)
class MetadataFile:
    """A parsed metadata file: its rows in file order and whether it has the distance column."""

    path: str
    rows: tuple[MetadataRow, ...]
    has_distance: bool

    @property
    def last_frame(self) -> int | None:
        return max((r.frame for r in self.rows), default=None)


def _number(text: str, where: str, field: str, low: float, high: float) -> float:
    return parse_float(text, where, field, minimum=low, maximum=high)


def _integer(text: str, where: str, field: str, *, minimum: int = 0) -> int:
    return parse_int(text, where, field, minimum=minimum, maximum=INT64_MAX)


def parse_metadata_text(
    text: str,
    path: str,
    *,
    n_classes: int = len(STARSS23_CLASSES),
    n_frames: int | None = None,
    allow_four_columns: bool = False,
) -> MetadataFile:
    """Parse and validate the text of one metadata file.

    Parameters
    ----------
    text
        The file's content.
    path
        Its name, for the messages.
    n_classes
        Class indices must lie in ``[0, n_classes)``.
    n_frames
        The clip's length in 100 ms frames; a row at or past it is an error (None: unchecked).
    allow_four_columns
        Accept ``frame,class,azimuth,elevation`` rows (some prediction files have no source
        column; the source is then 0).

    Raises
    ------
    InputError
        ``FILE:LINE: FIELD ...`` for the first bad row: a missing column, a non-integer or
        negative frame, an unknown class index, an azimuth outside [−180, 180], an elevation
        outside [−90, 90], a negative distance, a row past the clip's end, the same frame,
        class and source twice, or rows of different widths.
    """
    rows: list[MetadataRow] = []
    width: int | None = None
    seen: dict[tuple[int, int, int], int] = {}
    # Physical lines: "\n", "\r\n" or "\r" end one (str.splitlines would also split at form
    # feeds and U+2028 and count lines no editor shows).
    for line_no, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        # Fast path for a well-formed row (80,000 rows of an evaluation are read in a blink);
        # anything unusual falls through to the checks below, which name the problem.
        fields = raw.split(",")
        if line_no > 1 and len(fields) == width and (width == 5 or width == 6) and raw.isascii():
            try:
                frame, class_index, source = int(fields[0]), int(fields[1]), int(fields[2])
                azimuth, elevation = float(fields[3]), float(fields[4])
                distance = float(fields[5]) if width == 6 else None
            except ValueError:
                pass
            else:
                key = (frame, class_index, source)
                if (
                    0 <= frame <= INT64_MAX and 0 <= class_index < n_classes and 0 <= source <= INT64_MAX
                    and -180.0 <= azimuth <= 180.0 and -90.0 <= elevation <= 90.0
                    and (distance is None or (0 <= distance <= MAX_DISTANCE_CM))
                    and (n_frames is None or frame < n_frames) and key not in seen
                    and "_" not in raw  # int() and float() accept 1_000; the format does not
                ):
                    seen[key] = line_no
                    rows.append(MetadataRow(frame, class_index, source, azimuth, elevation, distance, line_no))
                    continue
        line = raw.strip().lstrip("\ufeff")
        if not line:
            continue
        where = f"{path}:{line_no}"
        fields = [f.strip() for f in line.split(",")]
        if line_no == 1 and fields[0].lower() == "frame":
            continue  # a header some tools write; STARSS23 itself has none
        if len(fields) == 4 and allow_four_columns:
            fields = [fields[0], fields[1], "0", fields[2], fields[3]]
        if len(fields) < len(COLUMNS_2023):
            missing = COLUMNS_2023[len(fields)]
            raise InputError(
                f"{where}: column '{missing}' is missing (rows are frame,class,source,azimuth,elevation[,distance])"
            )
        if len(fields) > len(COLUMNS_2024):
            raise InputError(f"{where}: {len(fields)} columns; rows are frame,class,source,azimuth,elevation[,distance]")
        if width is None:
            width = len(fields)
        elif len(fields) != width:
            raise InputError(
                f"{where}: {len(fields)} columns where earlier rows have {width}; a file is either all "
                "2023 (5 columns) or all 2024 (6 columns, with distance)"
            )
        frame = _integer(fields[0], where, "frame")
        class_index = _integer(fields[1], where, "class")
        if class_index >= n_classes:
            raise InputError(f"{where}: class {class_index} is unknown (the class list has {n_classes} classes, 0-{n_classes - 1})")
        source = _integer(fields[2], where, "source")
        azimuth = _number(fields[3], where, "azimuth", -180.0, 180.0)
        elevation = _number(fields[4], where, "elevation", -90.0, 90.0)
        distance = None
        if len(fields) == 6:
            distance = parse_float(fields[5], where, "distance")
            if distance < 0:
                raise InputError(f"{where}: distance {fields[5]} cm is negative")
            if distance > MAX_DISTANCE_CM:
                raise InputError(f"{where}: distance {fields[5]} cm is beyond {MAX_DISTANCE_CM:.0f} cm (1,000 km)")
        if n_frames is not None and frame >= n_frames:
            raise InputError(
                f"{where}: frame {frame} ({frame * FRAME_S:.1f} s) is past the clip's end "
                f"({n_frames * FRAME_S:.1f} s, {n_frames} frames)"
            )
        key = (frame, class_index, source)
        if key in seen:
            raise InputError(f"{where}: frame {frame}, class {class_index}, source {source} already given on line {seen[key]}")
        seen[key] = line_no
        rows.append(MetadataRow(frame, class_index, source, azimuth, elevation, distance, line_no))
    return MetadataFile(path=path, rows=tuple(rows), has_distance=width == 6)


def read_metadata(path: str | Path, **options: object) -> MetadataFile:
    """Read and validate one metadata file (see :func:`parse_metadata_text` for ``options``)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return parse_metadata_text(text, str(p), **options)  # type: ignore[arg-type]


def rows_to_events(metadata: MetadataFile, class_names: tuple[str, ...] = STARSS23_CLASSES,
                   vocabulary: str = "starss23") -> list[SpatialEventData]:
    """Group rows into events: each run of consecutive frames of one (class, source) pair.

    The track keeps every frame's direction (and distance), so writing the events back gives
    the same rows.
    """
    by_pair: dict[tuple[int, int], list[MetadataRow]] = defaultdict(list)
    for row in metadata.rows:
        by_pair[(row.class_index, row.source)].append(row)
    events: list[SpatialEventData] = []
    for (class_index, source), rows in sorted(by_pair.items()):
        rows.sort(key=lambda r: r.frame)
        run: list[MetadataRow] = []
        for row in rows:
            if run and row.frame != run[-1].frame + 1:
                events.append(_event_of(run, class_names[class_index], source, vocabulary))
                run = []
            run.append(row)
        if run:
            events.append(_event_of(run, class_names[class_index], source, vocabulary))
    events.sort(key=lambda e: (e.onset_s, e.class_name, e.source_index))
    return events


def _event_of(run: list[MetadataRow], class_name: str, source: int, vocabulary: str) -> SpatialEventData:
    track = tuple(
        (r.azimuth, r.elevation) if r.distance is None else (r.azimuth, r.elevation, r.distance) for r in run
    )
    return SpatialEventData(
        onset_s=round(run[0].frame * FRAME_S, 6),
        offset_s=round((run[-1].frame + 1) * FRAME_S, 6),
        class_name=class_name,
        track=track,
        source_index=source,
        vocabulary=vocabulary,
    )


def events_to_rows(
    events: list[SpatialEventData], class_names: tuple[str, ...] = STARSS23_CLASSES
) -> tuple[list[MetadataRow], bool]:
    """The metadata rows of ``events``, sorted by frame, class and source.

    Returns the rows and whether they carry distances (all of them do, or none).

    Raises
    ------
    InputError
        An event whose class is not in ``class_names``, two events of one class and source
        covering the same frame, or distances on some events only.
    """
    index_of = {name: i for i, name in enumerate(class_names)}
    rows: list[MetadataRow] = []
    with_distance = [e.mean_distance_cm() is not None for e in events]
    if any(with_distance) and not all(with_distance):
        missing = next(e for e, d in zip(events, with_distance) if not d)
        raise InputError(
            f"event {missing.uid or ''} ({missing.class_name} at {missing.onset_s:g} s) has no distance while others "
            "do; the 2024 format needs a distance on every row: set it or remove the others"
        )
    has_distance = bool(events) and all(with_distance)
    owner: dict[tuple[int, int, int], SpatialEventData] = {}
    for event in events:
        if event.class_name not in index_of:
            raise InputError(
                f"event {event.uid or ''} has class {event.class_name!r}, which is not in the export's class list "
                f"({len(class_names)} classes); pass the project's class list with --class-list FILE"
            )
        class_index = index_of[event.class_name]
        first, n = frame_span(event.onset_s, event.offset_s)
        for k in range(n):
            entry = event.direction_at(k)
            azimuth, elevation = float(entry[0]), float(entry[1])
            if event.direction_kind == "lateral" and event.front_back == "back":
                azimuth = mirror_lateral(azimuth)
            distance = None
            if has_distance:
                distance = float(entry[2]) if len(entry) > 2 and entry[2] is not None else event.distance_cm
            key = (first + k, class_index, event.source_index)
            if key in owner:
                raise InputError(
                    f"events {owner[key].uid or ''} and {event.uid or ''} ({event.class_name}, source "
                    f"{event.source_index}) both cover frame {first + k}; give one of them another source index"
                )
            owner[key] = event
            rows.append(MetadataRow(first + k, class_index, event.source_index, azimuth, elevation, distance))
    rows.sort(key=lambda r: (r.frame, r.class_index, r.source))
    return rows, has_distance


def format_number(value: float) -> str:
    """Integral values as integers (the STARSS23 files' own form), others as Python writes them."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def format_rows(rows: list[MetadataRow], has_distance: bool) -> str:
    """The CSV text of ``rows`` (no header, ``\\n`` line ends)."""
    lines = []
    for r in rows:
        fields = [str(r.frame), str(r.class_index), str(r.source), format_number(r.azimuth), format_number(r.elevation)]
        if has_distance:
            fields.append(format_number(r.distance if r.distance is not None else 0.0))
        lines.append(",".join(fields))
    return "".join(line + "\n" for line in lines)


def read_class_list(path: str | Path) -> tuple[str, ...]:
    """A project's class list: one class name per line (index = line order; blank lines skipped)."""
    p = Path(path)
    try:
        names = [line.strip() for line in p.read_text(encoding="utf-8-sig").splitlines() if line.strip()]
    except OSError as exc:
        raise InputError(f"{p}: cannot read the class list ({exc.strerror or exc})") from None
    if not names:
        raise InputError(f"{p}: the class list is empty; write one class name per line")
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise InputError(f"{p}: class {sorted(duplicates)[0]!r} is listed twice")
    return tuple(names)
