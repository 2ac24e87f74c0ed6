"""The visibility policy on its own (Qt-free): blind mode, a blind plan, reveal, guess mode."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workbench.review.views import CategoryRow, ClipDetail, ClipLabelState, ExpertLabelView
from workbench.review.visibility import JUDGE_FIELDS, PLACE_FIELDS, VisibilityPolicy


def _category(category_id: str, *, mine: int | None = None, others: bool = False, top: bool = True) -> CategoryRow:
    other = (ExpertLabelView(2, "bob", 3, "helped", None),) if others else ()
    return CategoryRow(category_id, category_id, "root", 0.5 if top else None, {}, None, None, None, mine, None, None,
                       other, expert_version=1 if mine is not None else 0, among_top_tags=top)


def _detail(*categories: CategoryRow, rating: int | None = None) -> ClipDetail:
    return ClipDetail(
        clip_id=7, key="k", title="t", description="", city="c", country="x", continent="y", latitude=1.0,
        longitude=2.0, is_demo=False, audio_path=None, audio_problem=None, n_channels=None, sample_rate=None,
        duration_s=None, layout=None, predictions=(), tags=(), timelines=(), categories=categories, judge_names=(),
        own_label=ClipLabelState(rating=rating), other_clip_labels=(), localizability=1.0, percentile=50.0,
        candidate=True, theta=0.0, quality_flags=(),
    )


def test_blind_mode_hides_until_labels_are_entered_or_revealed() -> None:
    policy = VisibilityPolicy(blind_mode=True)
    changes = []
    policy.subscribe(lambda: changes.append(1))
    detail = _detail(_category("a"), _category("z", others=True, top=False))
    policy.set_clip(detail)
    assert not policy.judges_visible() and policy.can_reveal()
    assert policy.hidden_row_fields() == JUDGE_FIELDS
    assert [r.category_id for r in policy.categories(detail)] == ["a"]  # another expert's row: hidden
    assert policy.reveal() is not None and not changes  # not rated: nothing revealed
    policy.set_clip(replace(detail, own_label=ClipLabelState(rating=4)))
    assert policy.reveal() is None and changes == [1] and policy.judges_visible()
    assert [r.category_id for r in policy.categories(detail)] == ["a", "z"]
    # the clip's own labels enter it as well (the other expert's row is not hers to label)
    fresh = VisibilityPolicy(blind_mode=True)
    fresh.set_clip(_detail(_category("a", mine=2), _category("z", others=True, top=False)))
    assert fresh.judges_visible()
    fresh.set_blind_mode(False)
    assert fresh.hidden_row_fields() == frozenset()


@pytest.mark.parametrize(("remembered", "plan_blind", "blind"), [(False, True, True), (False, False, False),
                                                                 (True, False, True)])
def test_a_blind_plan_starts_blind(remembered: bool, plan_blind: bool, blind: bool) -> None:
    assert VisibilityPolicy(blind_mode=remembered, plan_blind=plan_blind).blind_mode is blind


def test_guess_mode_hides_the_place_until_the_guess_is_saved() -> None:
    policy = VisibilityPolicy(blind_mode=False)
    policy.set_clip(_detail())
    assert policy.location_visible() and not policy.map_hidden()
    policy.set_guess_mode(True)
    assert not policy.location_visible() and policy.map_hidden()
    assert policy.hidden_row_fields() == PLACE_FIELDS and "guess" in (policy.row_hidden_reason("title") or "")
    policy.set_clip(_detail(), guess_saved=True)
    assert policy.location_visible() and not policy.map_hidden()
    assert policy.hidden_row_fields() == PLACE_FIELDS  # every other clip of the list is still to guess
    assert policy.mode_names() == ["guess mode"]
