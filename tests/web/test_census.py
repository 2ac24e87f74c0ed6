"""The census can fail: it finds every kind of hidden value where one is, on the real recordings."""

from __future__ import annotations

from pathlib import Path

from storage import open_store
from tests.web.census import find_hidden, hidden_values, id3_texts


def test_the_census_finds_the_place_in_the_recordings_and_in_a_page(tmp_path: Path, shared_dir: Path) -> None:
    from tests.web import real_project

    db, keys, recordings = real_project.build(tmp_path, shared_dir)
    store = open_store(db)
    try:
        hidden = hidden_values(store, keys, recordings)
    finally:
        store.dispose()
    essaouira = shared_dir / real_project.RECORDINGS["aporee_26839_30948"]
    assert any("Essaouira" in text for text in id3_texts(essaouira))
    # the shipped MP3: its ID3 frames name the place; so does its file name
    found = find_hidden(essaouira.read_bytes(), hidden)
    assert any("ID3 tag" in f for f in found) and any("Essaouira" in f for f in found)
    assert find_hidden(b"<p>52.4965, 13.4286</p>", hidden)  # Berlin's position, pair of 4 decimals
    assert find_hidden(b'{"lat": 31.52, "lon": -9.77}', hidden) == []  # lone 2-decimal numbers are not searched
    assert find_hidden(b'[31.52,-9.77]', hidden)  # ... a pair of them is
    assert find_hidden("Amsel im Hinterhof, Berlin".encode("utf-16-le"), hidden)
    assert any("gemini-3-pro-preview" in what for what in hidden.values())
    assert find_hidden(b"<html><body>Where was this recorded?</body></html>", hidden) == []
