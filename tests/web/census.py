"""The blinding census: every value a participant must not learn about a clip, and a search for them.

design/web-study.md, "Blinding, stated as a test": no byte the server sends (HTML, JSON, scripts,
styles, headers, cookies, URLs, error pages, the audio file and its metadata) may contain a clip's
coordinates in any common format, city, country, continent, title, description, file name,
recordist, source URL, clip key, or any model's answer or distance — nor the ID3 tags of its
recording. :func:`hidden_values` lists them from the store and the recordings themselves;
:func:`find_hidden` searches bytes for them as UTF-8, UTF-16 and Latin-1 text, case-insensitively.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterable
from pathlib import Path

from sqlalchemy import select

from storage import tables as T

# Values shorter than this are left out: "UK" or "Asia" occur by chance in binary audio and in
# ordinary words; the longer names and every coordinate format still bind the census.
MIN_CHARS = 5


def coordinate_formats(value: float) -> set[str]:
    """A coordinate as a page or a file might write it: 3-8 decimals, rounded and cut, and repr.

    One or two decimals alone ("52.50") are ordinary numbers (the map's outline has thousands of
    them); those are searched as a position's pair instead (:func:`position_formats`).
    """
    out = {repr(float(value)), str(float(value))}
    for decimals in range(3, 9):
        out.add(f"{value:.{decimals}f}")
        cut = math.trunc(value * 10**decimals) / 10**decimals
        out.add(f"{cut:.{decimals}f}")
    return {text for text in out if len(text.lstrip("-")) >= MIN_CHARS}


def position_formats(latitude: float, longitude: float) -> set[str]:
    """A position written as a pair with one or two decimals ("52.50, 13.43", "[13.4,52.5]")."""
    out = set()
    for decimals in (1, 2):
        lat, lon = f"{latitude:.{decimals}f}", f"{longitude:.{decimals}f}"
        for a, b in ((lat, lon), (lon, lat)):
            out.update({f"{a}, {b}", f"{a},{b}", f"{a} {b}"})
    return out


def id3_texts(path: Path) -> set[str]:
    """The text of every ID3v2 text and comment frame of an MP3 (title, artist, album, comment …)."""
    data = path.read_bytes()
    if data[:3] != b"ID3":
        return set()
    version = data[3]
    size = sum((b & 0x7F) << (7 * (3 - i)) for i, b in enumerate(data[6:10]))
    position, end, texts = 10, 10 + size, set()
    while position + 10 <= end:
        frame_id = data[position:position + 4]
        if not frame_id.strip(b"\0"):
            break
        raw_size = data[position + 4:position + 8]
        length = (sum((b & 0x7F) << (7 * (3 - i)) for i, b in enumerate(raw_size)) if version == 4
                  else struct.unpack(">I", raw_size)[0])
        body = data[position + 10:position + 10 + length]
        position += 10 + length
        if not body or not (frame_id.startswith(b"T") or frame_id == b"COMM"):
            continue
        encoding, payload = body[0], body[1:]
        if frame_id == b"COMM":
            payload = payload[3:]  # language
        codec = {0: "latin-1", 1: "utf-16", 2: "utf-16-be", 3: "utf-8"}.get(encoding, "latin-1")
        for part in payload.decode(codec, errors="ignore").split("\0"):
            part = part.strip()
            if len(part) >= MIN_CHARS and not part.isdigit():
                texts.add(part)
    return texts


def hidden_values(store, clip_keys: Iterable[str], recordings: Iterable[Path] = ()) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Every value the census searches for, mapped to what it is (for the failure message)."""
    keys = list(clip_keys)
    c, pr, run = T.clip.c, T.prediction.c, T.alm_run.c
    hidden: dict[str, str] = {}

    def add(value: object, what: str, *, words: bool = False) -> None:
        if value is None:
            return
        if isinstance(value, float):
            for text in coordinate_formats(value):
                hidden.setdefault(text, what)
            return
        text = str(value).strip()
        if len(text) >= MIN_CHARS:
            hidden.setdefault(text, what)
        # each longer word of a place name on its own too ("Essaouira" of a title, "Treptow"); not
        # of free text, whose ordinary words ("recording") a page may well say
        for word in re.findall(r"[^\W\d_]{6,}", text) if words else ():
            hidden.setdefault(word, f"{what} (word)")

    with store.read() as connection:
        clips = connection.execute(select(T.clip).where(c.key.in_(keys))).all()
        for clip in clips:
            row = clip._mapping
            for name in ("key", "short_key", "title", "description", "mp3name", "audio_path", "city", "country",
                         "continent", "url", "recordist", "source_url"):
                if name in row:
                    add(row[name], f"{clip.key}: {name}", words=name in ("title", "city", "country"))
            for name in ("latitude", "longitude"):
                if row.get(name) is not None:
                    add(float(row[name]), f"{clip.key}: {name}")
            if row.get("latitude") is not None and row.get("longitude") is not None:
                for text in position_formats(float(row["latitude"]), float(row["longitude"])):
                    hidden.setdefault(text, f"{clip.key}: position")
        answers = connection.execute(
            select(run.model, pr.predicted_city, pr.predicted_country, pr.predicted_latitude, pr.predicted_longitude,
                   pr.distance_error_km, c.key).join(T.alm_run, run.id == pr.alm_run_id)
            .join(T.clip, c.id == pr.clip_id).where(c.key.in_(keys))).all()
    for a in answers:
        add(a.predicted_city, f"{a.key}: {a.model}'s city", words=True)
        add(a.predicted_country, f"{a.key}: {a.model}'s country", words=True)
        for name in ("predicted_latitude", "predicted_longitude"):
            try:
                add(float(getattr(a, name)), f"{a.key}: {a.model}'s {name}")
            except (TypeError, ValueError):
                add(getattr(a, name), f"{a.key}: {a.model}'s {name}")
        if a.distance_error_km is not None:
            add(f"{a.distance_error_km:.1f}", f"{a.key}: {a.model}'s distance")
            add(f"{a.distance_error_km:,.0f}", f"{a.key}: {a.model}'s distance")
    for path in recordings:
        add(path.name, "recording file name")
        add(path.stem, "recording file name")
        for text in id3_texts(path):
            add(text, f"ID3 tag of {path.name}")
    return hidden


def _encodings(text: str) -> list[bytes]:
    out = [text.encode("utf-8"), text.encode("utf-16-le"), text.encode("utf-16-be")]
    try:
        out.append(text.encode("latin-1"))
    except UnicodeEncodeError:
        pass
    return out


def find_hidden(data: bytes, hidden: dict[str, str]) -> list[str]:
    """What of ``hidden`` occurs in ``data`` (case-insensitive), as "value (what)" lines."""
    lowered = data.lower()
    found = []
    for value, what in hidden.items():
        if any(encoded.lower() in lowered for encoded in _encodings(value)):
            found.append(f"{value!r} ({what})")
    return found


def without_fixed_lists(data: bytes) -> bytes:
    """A page with the questionnaire's whole ISO lists (every country, every offered language) taken out.

    Those lists name every country, the clips' included, but they are the same for every
    participant and every study's clips, so they tell nothing. A ``<select>`` goes only when its
    options are exactly ISO 3166's countries, or ISO 639-1's languages plus other ISO 639-3
    languages under their own names; any other list, or an option beside one, stays and is searched.
    """
    from markupsafe import escape  # the template engine's own escaping

    from workbench.studies.questionnaire import _language_name, _languages_639_1, countries

    def option(code: str, name: str) -> bytes:
        return f'<option value="{code}">{escape(name)}</option>'.encode()

    country_list = {option(c, n) for c, n in countries()}
    language_base = {option(c, n) for c, n in _languages_639_1()}
    blank = b'<option value="">Choose\xe2\x80\xa6</option>'

    def whole(options: set[bytes]) -> bool:
        options = options - {blank}
        if options == country_list:
            return True
        if not language_base <= options:
            return False
        for extra in options - language_base:
            match = re.fullmatch(rb'<option value="([a-z]{3})">([^<]*)</option>', extra)
            name = match and _language_name(match.group(1).decode())
            if not name or option(match.group(1).decode(), name) != extra:
                return False
        return True

    def strip(block: re.Match[bytes]) -> bytes:
        inner = block.group(2)
        options = re.findall(rb'<option value="[^"]*">[^<]*</option>', inner)
        if re.sub(rb'<option value="[^"]*">[^<]*</option>|\s', b"", inner) or not whole(set(options)):
            return block.group(0)
        return block.group(1) + b"</select>"

    return re.sub(rb"(<select[^>]*>)(.*?)</select>", strip, data, flags=re.S)
