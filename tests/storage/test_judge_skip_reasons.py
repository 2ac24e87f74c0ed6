"""Why a clip is not judged says what happened: a clip never tagged (no recording) is not a clip in
which the tagger heard nothing."""

from __future__ import annotations

from storage.models import AlmRun, Clip, Dataset, Prediction, Tag, TaggerRun, TagStatus


def test_a_clip_never_tagged_is_not_reported_as_heard_nothing(store) -> None:  # type: ignore[no-untyped-def]
    from workbench.attribution.inputs import select_clip_inputs

    with store.write() as s:
        dataset, alm, run = Dataset(name="d"), AlmRun(model="alm"), TaggerRun(model_name="mn10_as", status="done")
        s.add_all([dataset, alm, run])
        s.flush()
        quiet = Clip(dataset_id=dataset.id, key="quiet", latitude=1.0, longitude=1.0)
        silent = Clip(dataset_id=dataset.id, key="no-audio", latitude=1.0, longitude=1.0)
        s.add_all([quiet, silent])
        s.flush()
        for clip in (quiet, silent):
            s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id=clip.key, predicted_latitude="1",
                             predicted_longitude="1", reasoning="I hear a tram."))
        s.add(TagStatus(tagger_run_id=run.id, clip_id=quiet.id, status="done"))
        s.add(Tag(tagger_run_id=run.id, clip_id=quiet.id, class_index=0, audioset_id="/m/09x0r", probability=0.01))
    reasons = {skip.key: skip.reason for skip in select_clip_inputs(store).skipped}
    assert reasons["quiet"].startswith("no tag with probability ≥ 0.15")
    assert "was not tagged in tagger run" in reasons["no-audio"] and "media link" in reasons["no-audio"]
