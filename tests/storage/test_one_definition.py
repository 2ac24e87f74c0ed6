"""One definition per concept: every part of the workbench reads the same current tagger run."""

from __future__ import annotations

from sqlmodel import select

from storage.models import AlmRun, Clip, Dataset, Prediction, Tag, TaggerRun
from workbench.attribution.inputs import latest_tagger_run_id
from workbench.curation.inputs import gather_inputs
from workbench.project import clip_record, current_tagger_run_id
from workbench.review.service import ReviewService


def _run(store, status: str, clip_id: int | None, probability: float) -> int:  # type: ignore[no-untyped-def]
    with store.write() as s:
        run = TaggerRun(model_name="mn10_as", status=status)
        s.add(run)
        s.flush()
        if clip_id is not None:
            s.add(Tag(tagger_run_id=run.id, clip_id=clip_id, class_index=0, audioset_id="/m/09x0r",
                      probability=probability))
        return int(run.id)


def test_review_judges_curation_and_read_back_use_one_tagger_run(store) -> None:  # type: ignore[no-untyped-def]
    with store.write() as s:
        dataset = Dataset(name="d")
        alm = AlmRun(model="alm")
        s.add_all([dataset, alm])
        s.flush()
        clip = Clip(dataset_id=dataset.id, key="k1", human_sounds=0.0, latitude=1.0, longitude=1.0)
        s.add(clip)
        s.flush()
        s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id="k1", predicted_latitude="1",
                         predicted_longitude="1"))
        clip_id = int(clip.id)

    def everyone() -> set[object]:
        """The run each reader uses, told apart by the probability each run stored."""
        with store.session() as s:
            by_run = {run_id: p for run_id, p in s.exec(select(Tag.tagger_run_id, Tag.probability))}
            seen = {by_run[current_tagger_run_id(s)], by_run[latest_tagger_run_id(s)]}
        seen |= {t.probability for t in ReviewService(store, {}, {}).clip_detail(clip_id, None).tags}
        inputs = gather_inputs(store, "alm")
        seen.add(by_run[inputs.tagger_run_id])
        seen |= {t["probability"] for t in clip_record(store, "k1")["tags"]}
        return seen

    _run(store, "running", clip_id, 0.2)  # interrupted, nothing finished yet
    assert everyone() == {0.2}
    _run(store, "done", clip_id, 0.9)
    _run(store, "cancelled", clip_id, 0.4)  # a newer run stopped midway
    _run(store, "done", None, 0.0)  # finished, but stored no tags (every clip failed)
    assert everyone() == {0.9}


def test_the_speech_rule_is_one_rule_over_the_current_tagger_run(store) -> None:  # type: ignore[no-untyped-def]
    """The browser's speech column and the agreement breakdown agree: tag of the current run
    (not of a newer cancelled one), threshold 0.15, or human_sounds >= 0.1."""
    from workbench.agreement.units import load_ratings

    with store.write() as s:
        dataset = Dataset(name="d")
        alm = AlmRun(model="alm")
        s.add_all([dataset, alm])
        s.flush()
        clips = {key: Clip(dataset_id=dataset.id, key=key, human_sounds=hs)
                 for key, hs in (("quiet", 0.0), ("talk", 0.5), ("tagged", None))}
        s.add_all(clips.values())
        s.flush()
        ids = {key: int(c.id) for key, c in clips.items()}
    done = _run(store, "done", ids["quiet"], 0.1)
    with store.write() as s:
        s.add(Tag(tagger_run_id=done, clip_id=ids["tagged"], class_index=0, audioset_id="/m/09x0r", probability=0.2))
    _run(store, "cancelled", ids["quiet"], 0.9)  # would make "quiet" a speech clip if it counted
    browser = {r.key: r.speech for r in ReviewService(store, {}, {}).clip_rows()}
    agreement = dict(zip(load_ratings(store).clips["clip_key"], load_ratings(store).clips["speech"]))
    assert browser == {"quiet": False, "talk": True, "tagged": True}
    assert agreement == browser
