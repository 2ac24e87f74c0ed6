"""Per-annotator progress read from the stored labels (any backend)."""

from __future__ import annotations

from tests.storage.test_curation_fixtures import SPEECH, WORKED_EXAMPLE, build_project
from workbench.labels import LabelService
from workbench.team import annotator_progress


def test_progress_counts_each_annotators_own_labels(any_store) -> None:  # type: ignore[no-untyped-def]
    ids = build_project(any_store, WORKED_EXAMPLE)
    labels = LabelService(any_store)
    ada = labels.ensure_annotator("ada")
    bob = labels.ensure_annotator("bob")
    labels.ensure_annotator("cy")
    labels.set_clip_label(ada.id, ids["clip_A"], rating=4, command_id="c1")
    labels.set_clip_label(ada.id, ids["clip_B"], decision="accept", command_id="c2")
    labels.set_category_label(ada.id, ids["clip_C"], SPEECH, contribution=2, command_id="c3")
    labels.set_category_label(bob.id, ids["clip_A"], SPEECH, effect="helped", command_id="c4")
    labels.set_category_polarity(bob.id, SPEECH, "N", command_id="c5")

    by_name = {p.name: p for p in annotator_progress(any_store)}
    assert set(by_name) == {"ada", "bob", "cy"}
    a, b, c = by_name["ada"], by_name["bob"], by_name["cy"]
    assert (a.clips_labelled, a.clips_rated, a.clips_decided, a.category_labels) == (3, 1, 1, 1)
    assert (b.clips_labelled, b.category_labels, b.polarity_overrides) == (1, 1, 1)
    assert c.clips_labelled == 0 and c.last_activity is None
    assert a.n_clips == 3 and a.clips_labelled == a.n_clips
    assert a.last_activity is not None and b.last_activity is not None

    # clearing the only rating removes the clip from the count
    labels.set_clip_label(ada.id, ids["clip_A"], rating=None, command_id="c6")
    assert {p.name: p for p in annotator_progress(any_store)}["ada"].clips_labelled == 2


def test_team_progress_and_study_progress_count_the_same_labels(store) -> None:  # type: ignore[no-untyped-def]
    """One definition of "labelled" (workbench.labels.labelled_pairs): a guess or an error-mode tag
    counts, an undone label does not."""
    from workbench.labels import labelled_pairs
    from workbench.studies.localizers import GuessService

    ids = build_project(store, WORKED_EXAMPLE)
    labels = LabelService(store)
    eve = labels.ensure_annotator("eve")
    GuessService(store).set_guess(eve.id, ids["clip_A"], latitude=1.0, longitude=2.0)
    labels.set_clip_label(eve.id, ids["clip_B"], note="odd hum", command_id="n1")
    labels.set_clip_label(eve.id, ids["clip_C"], rating=3, command_id="r1")
    labels.set_clip_label(eve.id, ids["clip_C"], rating=None, command_id="r1", action="undo")
    progress = {p.name: p for p in annotator_progress(store)}["eve"]
    with store.session() as s:
        pairs = {c for a, c in labelled_pairs(s) if a == eve.id}
    assert progress.clips_labelled == len(pairs) == 2 and pairs == {ids["clip_A"], ids["clip_B"]}
