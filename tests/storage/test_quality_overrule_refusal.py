"""`aglw quality overrule` names a flag the clip has now (issue 40: an overrule of a flag the clip
does not have was saved with exit 0). The clip's flags come from their one owner,
`workbench.audio.flags`; a refused overrule stores nothing."""

from __future__ import annotations

import json

from sqlalchemy import func, select

from cli.main import main
from storage import open_store
from storage.models import Annotator, LabelHistory, QualityOverrule
from tests.storage.test_curation_fixtures import add_annotator, set_quality
from tests.storage.test_curation_selection_export import project


def _stored(db: str) -> tuple[int, int, int]:
    store = open_store(db)
    try:
        with store.session() as s:
            return tuple(s.exec(select(func.count()).select_from(table)).one()[0]  # type: ignore[return-value]
                         for table in (QualityOverrule, LabelHistory, Annotator))
    finally:
        store.dispose()


def test_an_overrule_of_a_flag_the_clip_does_not_have_is_refused(sqlite_path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = open_store(sqlite_path)
    ids = project(store)
    add_annotator(store, "erin")
    set_quality(store, ids["clip_02"], rms_dbfs=-80.0, spectral_flatness=0.1, clipping_ratio=0.0, aci=9.0)
    set_quality(store, ids["clip_04"], rms_dbfs=-20.0, spectral_flatness=0.1, clipping_ratio=0.0, aci=9.0)
    store.dispose()
    db = str(sqlite_path)
    before = _stored(db)

    for clip, flag, has in (("clip_02", "clipping", "low_level"), ("clip_04", "low_level", "none"),
                            ("clip_05", "low_level", "none")):
        capsys.readouterr()
        rc = main(["--db", db, "--annotator", "zoe", "--json", "quality", "overrule", "--clip", clip, "--flag", flag])
        captured = capsys.readouterr()
        assert rc == 1, captured
        [line] = captured.err.strip().splitlines()
        assert f"clip {clip} has no {flag} flag" in line and f"its quality flags now: {has}" in line, line
        assert json.loads(captured.out)["exit_code"] == 1
    assert _stored(db) == before  # nothing saved, nothing in the history, no annotator "zoe" added

    # the flag it has is overruled as before
    capsys.readouterr()
    assert main(["--db", db, "--annotator", "erin", "quality", "overrule", "--clip", "clip_02", "--flag",
                 "low_level"]) == 0, capsys.readouterr().err
    assert _stored(db)[0] == before[0] + 1
