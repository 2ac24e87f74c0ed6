"""The AGL1K record's fields are listed once (workbench/agl1k_record.py): the runner writes exactly them,
in that order, and the importer knows exactly them."""

from __future__ import annotations

from workbench.agl1k_record import PREDICTED_FIELDS, RECORD_FIELDS, TRUE_FIELDS


def test_the_runner_writes_the_record_and_the_importer_reads_it() -> None:
    from workbench.alm.records import ClipFacts, answer_record
    from workbench.importing.predictions import KNOWN_FIELDS

    record = answer_record(ClipFacts(clip_id=1, key="k", latitude=1.0, longitude=2.0), question="q", fields={},
                           model_output="", seed=None)
    assert tuple(record) == RECORD_FIELDS
    assert KNOWN_FIELDS == set(RECORD_FIELDS)
    assert set(TRUE_FIELDS) | set(PREDICTED_FIELDS) < set(RECORD_FIELDS)
