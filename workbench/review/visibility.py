"""The one visibility policy of the review window: what the annotator may see on the shown clip now.

Every view, browser column, filter, tooltip, status line, title, map layer and menu of the review
window asks :class:`VisibilityPolicy`; nothing else decides (``tests/storage/test_one_definition.py``
fails if a second rule appears). The guarantees (design/studies.md, "Blinding guarantees"):

blind mode
    Nothing that could anchor the annotator's judgment before she has entered her own labels
    for the clip (:func:`workbench.review.rules.labels_entered`) or rated it and asked to reveal:
    the clip's localizability and |l − θ|, every judge's score, effect and evidence, the judges'
    consensus and disagreement, other experts' labels and notes. The browser shows no
    localizability, |l − θ| or disagreement of any clip (columns, filters and sorts); its queue
    order still ranks by them (the order names no value). A study plan that is blind starts the
    window blind whatever the machine last used.
guess mode
    Nothing that tells where the clip was recorded until the annotator's guess of it is saved:
    the true and predicted coordinates, city, country, continent, title, description, the ALMs'
    reasoning, the map's truth and the distance. The browser shows no clip's place or title
    (columns, filters, tooltips and search), since every clip in the list is one still to guess.

The policy is Qt-free: the window feeds it the mode switches and the shown clip, panels read it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.review.rules import labels_entered
from workbench.review.views import CategoryRow, ClipDetail

HIDDEN_IN_BLIND_MODE = "hidden in blind mode"
HIDDEN_IN_GUESS_MODE = "hidden in guess mode until your guess is saved"

# Browser (ClipRow) fields each mode hides for every clip of the list.
JUDGE_FIELDS = frozenset({"judge_disagreement", "localizability", "distance_from_theta"})
PLACE_FIELDS = frozenset({"country", "continent", "city", "title"})


def initial_blind_mode(remembered: bool, plan_blind: bool) -> bool:
    """Blind mode a window starts in: on when the annotator's study plan is blind, whatever this
    machine remembered (the menu may still switch it, for this session only)."""
    return remembered or plan_blind


@dataclass(frozen=True)
class ClipState:
    """What the policy knows of the shown clip."""

    detail: ClipDetail | None = None
    guess_saved: bool = False


class VisibilityPolicy:
    """Decides, for the current annotator and the shown clip, what may be shown now.

    Parameters
    ----------
    blind_mode
        The remembered blind-mode setting.
    plan_blind
        Whether the annotator's study plan is blind (the window starts blind).
    """

    def __init__(self, *, blind_mode: bool, plan_blind: bool = False) -> None:
        self.plan_blind = plan_blind
        self.blind_mode = initial_blind_mode(blind_mode, plan_blind)
        self.guess_mode = False
        self.revealed: set[int] = set()
        self.clip = ClipState()
        self._listeners: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ inputs

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` whenever what may be shown changes (a mode, a reveal, a guess saved)."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in list(self._listeners):
            listener()

    def set_blind_mode(self, on: bool) -> None:
        if on != self.blind_mode:
            self.blind_mode = on
            self._changed()

    def set_guess_mode(self, on: bool) -> None:
        if on != self.guess_mode:
            self.guess_mode = on
            self._changed()

    def set_clip(self, detail: ClipDetail | None, *, guess_saved: bool = False) -> None:
        """The shown clip (and whether the annotator's guess of it is stored); no notification:
        the window re-renders after a clip change anyway."""
        self.clip = ClipState(detail, guess_saved)

    def reveal(self) -> str | None:
        """Blind mode: reveal the shown clip's judges; the reason it cannot be, else None."""
        detail = self.clip.detail
        if detail is None:
            return "no clip shown"
        if detail.own_label.rating is None:
            return "rate the clip (1–5) before revealing the judges"
        self.revealed.add(detail.clip_id)
        self._changed()
        return None

    def mode_names(self) -> list[str]:
        """The modes on, for the window title ("blind mode", "guess mode")."""
        return [name for name, on in (("blind mode", self.blind_mode), ("guess mode", self.guess_mode)) if on]

    # ------------------------------------------------------------------ blind mode

    def judges_visible(self) -> bool:
        """Judges, consensus, localizability, |l − θ| and other experts of the shown clip."""
        detail = self.clip.detail
        if not self.blind_mode or detail is None:
            return True
        return labels_entered(detail, revealed=detail.clip_id in self.revealed)

    def can_reveal(self) -> bool:
        """Whether the Reveal button has something to reveal."""
        return self.clip.detail is not None and not self.judges_visible()

    def categories(self, detail: ClipDetail | None) -> list[CategoryRow]:
        """The Attribution grid's rows: the clip's top tags, the categories judged on it, every
        category the annotator labelled and, once the judges show, those other experts labelled."""
        if detail is None:
            return []
        show_others = self.judges_visible()
        return [row for row in detail.categories if show_others or not row.only_other_experts]

    def pool_votes_hidden(self) -> str | None:
        """Why the experts' accepts and rejects of every clip (the Selection view's list) are
        hidden — they are other experts' labels — or None when they may show."""
        return f"{HIDDEN_IN_BLIND_MODE}: the experts' accepts and rejects" if self.blind_mode else None

    # ------------------------------------------------------------------ guess mode

    def location_visible(self) -> bool:
        """The shown clip's truth, the ALMs' answers, reasoning, title, description and distances."""
        return not self.guess_mode or self.clip.detail is None or self.clip.guess_saved

    def map_hidden(self) -> bool:
        """Whether the map hides the truth, the answers and the pool overview."""
        return self.guess_mode and self.clip.detail is not None and not self.clip.guess_saved

    # ------------------------------------------------------------------ the clip list

    def hidden_row_fields(self) -> frozenset[str]:
        """The :class:`~workbench.review.views.ClipRow` fields the browser may neither show, filter,
        search nor sort by (for every clip of the list)."""
        hidden: frozenset[str] = frozenset()
        if self.blind_mode:
            hidden |= JUDGE_FIELDS
        if self.guess_mode:
            hidden |= PLACE_FIELDS
        return hidden

    def row_hidden_reason(self, field: str) -> str | None:
        """Why a browser field is hidden (for its filter's tooltip); None when it is shown."""
        if field not in self.hidden_row_fields():
            return None
        return HIDDEN_IN_GUESS_MODE if field in PLACE_FIELDS else HIDDEN_IN_BLIND_MODE

    def visible_row_fields(self, fields: Sequence[str]) -> list[str]:
        hidden = self.hidden_row_fields()
        return [f for f in fields if f not in hidden]
