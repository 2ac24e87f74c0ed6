"""Review service: browser rows, queue rule, clip detail, blind-mode rule."""

from __future__ import annotations

import pytest

from storage.models import (
    AlmRun,
    Clip,
    ClipQuality,
    CurationClipResult,
    CurationRun,
    Dataset,
    JudgeRun,
    Judgment,
    MediaRoot,
    Prediction,
    Tag,
    TaggerRun,
)
from workbench.errors import InputError
from workbench.labels import LabelService
from workbench.review.rules import judge_disagreement, labels_entered, review_queue
from workbench.review.service import ReviewService
from workbench.review.views import ClipRow


def _row(clip_id: int, key: str, *, status: str = "unreviewed", disagreement=None, score=None) -> ClipRow:
    return ClipRow(
        clip_id=clip_id, key=key, title="", country=None, continent=None, speech=None, review_status=status,
        judge_disagreement=disagreement, localizability=score, percentile=None, theta=0.1, quality_flags=(),
        is_demo=False, duration_s=None,
    )


def test_judge_disagreement_is_mean_range_over_categories() -> None:
    assert judge_disagreement({"a": [0, 3, 1], "b": [2, 2, None], "c": [1]}) == pytest.approx(0.5)
    assert judge_disagreement({"a": [2, None]}) is None
    assert judge_disagreement({}) is None


def test_review_queue_order_follows_its_rule() -> None:
    rows = [
        _row(1, "done-high", status="reviewed", disagreement=1.0, score=0.1),
        _row(2, "low", disagreement=0.2, score=0.1),
        _row(3, "high-far", disagreement=0.6, score=0.9),
        _row(4, "high-near", disagreement=0.6, score=0.05),
        _row(5, "none", disagreement=None, score=0.1),
        _row(6, "high-unscored", disagreement=0.6, score=None),
        _row(7, "a-tie", disagreement=0.2, score=0.1),
    ]
    order = [r.key for r in review_queue(rows)]
    assert order == ["high-near", "high-far", "high-unscored", "a-tie", "low", "none", "done-high"]


@pytest.fixture
def project(store, tmp_path):  # type: ignore[no-untyped-def]
    media = tmp_path / "media"
    media.mkdir()
    (media / "one.wav").write_bytes(b"")
    with store.write() as s:
        ds = Dataset(name="t")
        s.add(ds)
        s.flush()
        s.add(MediaRoot(dataset_id=ds.id, path=str(media)))
        c1 = Clip(dataset_id=ds.id, key="k1", title="<b>t</b>", description="a<br />b<script>x()</script>",
                  latitude=48.8566, longitude=2.3522, human_sounds=0.0, audio_path="one.wav", country="France")
        c2 = Clip(dataset_id=ds.id, key="k2", audio_path="../escape.wav", human_sounds=0.5)
        s.add(c1)
        s.add(c2)
        alm = AlmRun(model="m")
        tagger = TaggerRun(model_name="mn10", status="done", parameters={"class_names": {"/m/a": "Alpha"}})
        s.add(alm)
        s.add(tagger)
        s.flush()
        s.add(Prediction(alm_run_id=alm.id, clip_id=c1.id, question_id="k1", predicted_latitude="51.5074",
                         predicted_longitude="-0.1278", reasoning="bells at 0:04"))
        s.add(Tag(tagger_run_id=tagger.id, clip_id=c1.id, class_index=1, audioset_id="/m/a", probability=0.9))
        s.add(Tag(tagger_run_id=tagger.id, clip_id=c1.id, class_index=0, audioset_id="/m/09x0r", probability=0.2))
        old = JudgeRun(judge_name="J1", provider="p", model_id="x", prompt_version="v")
        new = JudgeRun(judge_name="J1", provider="p", model_id="x", prompt_version="v")
        other = JudgeRun(judge_name="J2", provider="p", model_id="y", prompt_version="v")
        for run in (old, new, other):
            s.add(run)
        s.flush()
        s.add(Judgment(judge_run_id=old.id, clip_id=c1.id, category_id="/m/a", contribution=0))
        s.add(Judgment(judge_run_id=new.id, clip_id=c1.id, category_id="/m/a", contribution=3, evidence="e"))
        s.add(Judgment(judge_run_id=other.id, clip_id=c1.id, category_id="/m/a", contribution=1))
        s.add(Judgment(judge_run_id=other.id, clip_id=c1.id, category_id="/m/09x0r", contribution=None,
                       status="failed"))
        run = CurationRun(input_fingerprint="f", parameters={"theta": 0.25})
        s.add(run)
        s.flush()
        s.add(CurationClipResult(run_id=run.id, clip_id=c1.id, localizability=0.5, percentile=100.0, candidate=True,
                                 quality_flags=[{"flag": "clipping", "value": 0.01}]))
        # the flags come from the metrics now (workbench/audio/flags.py), not from the stored fit
        s.add(ClipQuality(clip_id=c1.id, rms_dbfs=-20.0, spectral_flatness=0.1, clipping_ratio=0.01, aci=9.0))
        ids = (c1.id, c2.id)
    return store, ids


def test_clip_rows(project) -> None:  # type: ignore[no-untyped-def]
    store, (c1, c2) = project
    labels = LabelService(store)
    me = labels.ensure_annotator("me")
    labels.set_category_label(me.id, c1, "/m/a", contribution=2)
    rows = {r.key: r for r in ReviewService(store, {}, {}).clip_rows(me.id)}
    first = rows["k1"]
    # J1 counts with its latest run (3), J2 with 1: range 2 / 3.
    assert first.judge_disagreement == pytest.approx(2 / 3)
    assert first.speech is True  # Speech tag 0.2 ≥ 0.15
    assert first.localizability == 0.5 and first.theta == 0.25
    assert first.distance_from_theta == pytest.approx(0.25)
    assert first.quality_flags == ("clipping",)
    assert first.review_status == "in progress"
    assert rows["k2"].speech is True and rows["k2"].judge_disagreement is None
    assert rows["k2"].review_status == "unreviewed"
    labels.set_clip_label(me.id, c1, decision="accept")
    rows = {r.key: r for r in ReviewService(store, {}, {}).clip_rows(me.id)}
    assert rows["k1"].review_status == "reviewed"


def test_clip_detail(project) -> None:  # type: ignore[no-untyped-def]
    store, (c1, c2) = project
    labels = LabelService(store)
    me = labels.ensure_annotator("me")
    other = labels.ensure_annotator("other")
    labels.set_category_label(other.id, c1, "/m/a", contribution=1)
    service = ReviewService(store, {}, {})
    detail = service.clip_detail(c1, me.id)
    assert detail.description == "a<br />b<script>x()</script>"
    assert detail.predictions[0].error_km == pytest.approx(343.9, abs=1.0)
    assert detail.judge_names == ("J1", "J2")
    alpha = detail.category("/m/a")
    assert alpha.name == "Alpha"
    assert alpha.judgments["J1"].contribution == 3 and alpha.judgments["J1"].evidence == "e"
    assert alpha.consensus == pytest.approx((3 + 1) / 2 / 3)
    assert [o.annotator_name for o in alpha.other_experts] == ["other"]
    speech = detail.category("/m/09x0r")
    assert speech.consensus is None and speech.judgments["J2"].status == "failed"
    assert [c.category_id for c in detail.categories] == ["/m/a", "/m/09x0r"]
    assert detail.audio_path is not None and detail.audio_problem is None
    assert not labels_entered(detail)
    labels.set_clip_label(me.id, c1, rating=3)
    detail = service.clip_detail(c1, me.id)
    assert not labels_entered(detail) and labels_entered(detail, revealed=True)
    labels.set_category_label(me.id, c1, "/m/a", contribution=2)
    labels.set_category_label(me.id, c1, "/m/09x0r", contribution=0)
    assert labels_entered(service.clip_detail(c1, me.id))
    escaped = service.clip_detail(c2, me.id)
    assert escaped.audio_path is None and "outside the media roots" in escaped.audio_problem


def test_audio_source_resolves_the_audio_as_clip_detail_does(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The review window opens the audio from audio_source before clip_detail has run: both say
    the same, whichever media root holds the file."""
    store, (c1, c2) = project
    second = tmp_path / "second"
    second.mkdir()
    (second / "two.wav").write_bytes(b"")
    with store.write() as s:
        dataset_id = s.get(Clip, c1).dataset_id
        s.add(MediaRoot(dataset_id=dataset_id, path=str(second)))
        c3 = Clip(dataset_id=dataset_id, key="k3", audio_path="two.wav", layout="foa", layout_override="binaural")
        c4 = Clip(dataset_id=dataset_id, key="k4", audio_path=None)
        s.add_all([c3, c4])
        s.flush()
        more = (c3.id, c4.id)
    me = LabelService(store).ensure_annotator("me")
    service = ReviewService(store, {}, {})
    for clip_id in (c1, c2, *more):
        source, detail = service.audio_source(clip_id), service.clip_detail(clip_id, me.id)
        assert (source.clip_id, source.key) == (clip_id, detail.key)
        assert (source.audio_path, source.audio_problem) == (detail.audio_path, detail.audio_problem)
    assert service.audio_source(c1).audio_path == (tmp_path / "media" / "one.wav").resolve()
    three = service.audio_source(more[0])
    assert three.audio_path == (second / "two.wav").resolve() and three.layout == "binaural"
    assert "outside the media roots" in service.audio_source(c2).audio_problem
    assert service.audio_source(more[1]).audio_path is None and "no audio linked" in service.audio_source(more[1]).audio_problem
    with pytest.raises(InputError, match="no clip with id"):
        service.audio_source(10_000)


# --------------------------------------------------------------------------- direction view


def _write(path, samples, rate):  # type: ignore[no-untyped-def]
    import soundfile as sf

    sf.write(str(path), samples.astype("float32"), rate, subtype="FLOAT")
    return path


@pytest.fixture
def direction_files(tmp_path):  # type: ignore[no-untyped-def]
    import numpy as np

    from workbench.audio import synth

    rate = 16_000
    rng = np.random.default_rng(5)
    noise = synth.white_noise(rate * 3, rng)
    return {
        "ab": (_write(tmp_path / "ab.wav", synth.spaced_pair(noise, rate, 40.0, 0.3), rate), 40.0),
        "binaural": (_write(tmp_path / "bin.wav", synth.woodworth_binaural(noise, rate, -30.0), rate), -30.0),
        "stereo": (_write(tmp_path / "st.wav", np.stack([noise, 0.5 * noise], axis=1), rate), None),
        "ambix": (_write(tmp_path / "foa.wav", synth.encode_plane_wave(noise, 60.0), rate), 60.0),
    }


def _peak_row_value(view):  # type: ignore[no-untyped-def]
    import numpy as np

    low, high = view.y_range
    row = int(np.argmax(view.image.sum(axis=1)))
    return low + (row + 0.5) * (high - low) / view.image.shape[0]


def test_ab_direction_view_needs_a_spacing_and_uses_it(direction_files) -> None:  # type: ignore[no-untyped-def]
    from workbench.review.direction import AB_NEEDS_SPACING, direction_image

    path, lateral = direction_files["ab"]
    missing = direction_image(path, "ab", 2)
    assert missing.kind == "none" and missing.image is None and missing.note == AB_NEEDS_SPACING
    assert "ab_spacing_m" in missing.note
    view = direction_image(path, "ab", 2, spacing_m=0.3)
    assert view.kind == "lateral" and view.image.shape[0] == 36
    assert "spacing 0.3 m" in view.note and "mirror" in view.note
    assert abs(_peak_row_value(view) - lateral) <= 5.0


@pytest.mark.parametrize("layout", ["ab", "binaural", "stereo", "ms", "ambix", "fuma"])
def test_direction_from_decoded_samples_equals_the_file_analysis(direction_files, layout) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from workbench.audio.loader import load_audio
    from workbench.review.direction import direction_image

    path, _ = direction_files["ambix" if layout in ("ambix", "fuma") else "stereo" if layout == "ms" else layout]
    audio = load_audio(path)
    n = audio.samples.shape[1]
    from_file = direction_image(path, layout, n, spacing_m=0.3)
    shared = direction_image(path, layout, n, spacing_m=0.3, audio=audio)
    assert (shared.kind, shared.y_range, shared.note) == (from_file.kind, from_file.y_range, from_file.note)
    assert (shared.t0, shared.t1) == pytest.approx((from_file.t0, from_file.t1))
    assert shared.image.shape == from_file.image.shape and shared.image.max() > 0
    np.testing.assert_allclose(shared.image, from_file.image, atol=1e-5)


def test_direction_peaks_where_the_source_is(direction_files) -> None:  # type: ignore[no-untyped-def]
    from workbench.audio.loader import load_audio
    from workbench.review.direction import direction_image

    for layout in ("binaural", "ambix"):
        path, where = direction_files[layout]
        view = direction_image(path, layout, load_audio(path).samples.shape[1], audio=load_audio(path))
        assert abs(_peak_row_value(view) - where) <= 5.0, layout


def test_ab_spacing_comes_from_the_configuration(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from workbench.config import config_dir
    from workbench.review.direction import ab_spacing_from_config

    assert ab_spacing_from_config() == (None, None)
    config = config_dir() / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("ab_spacing_m = 0.42\n", encoding="utf-8")
    assert ab_spacing_from_config() == (0.42, None)
    for bad in ("-1", '"wide"', "0"):
        config.write_text(f"ab_spacing_m = {bad}\n", encoding="utf-8")
        spacing, problem = ab_spacing_from_config()
        assert spacing is None and "ab_spacing_m" in problem
    config.write_text("ab_spacing_m = [", encoding="utf-8")
    spacing, problem = ab_spacing_from_config()
    assert spacing is None and "not valid TOML" in problem


def test_clip_detail_carries_the_experts_category_polarity(project) -> None:  # type: ignore[no-untyped-def]
    store, (c1, _c2) = project
    labels = LabelService(store)
    me = labels.ensure_annotator("me")
    other = labels.ensure_annotator("other")
    service = ReviewService(store, {}, {})
    assert service.clip_detail(c1, me.id).category("/m/a").expert_category_polarity is None
    labels.set_category_polarity(me.id, "/m/a", "N")
    labels.set_category_polarity(other.id, "/m/09x0r", "P")
    labels.set_category_label(me.id, c1, "/m/a", polarity="P")
    detail = service.clip_detail(c1, me.id)
    assert detail.category("/m/a").expert_category_polarity == "N"
    assert detail.category("/m/a").expert_polarity == "P"
    assert detail.category("/m/09x0r").expert_category_polarity is None  # someone else's override
    assert service.clip_detail(c1, other.id).category("/m/09x0r").expert_category_polarity == "P"
