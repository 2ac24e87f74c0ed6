"""AGL1K's error-mode taxonomy as labels on ALM answers: the write path, reads and shares.

Experts tag a wrong or refused ALM answer (one clip, one ALM run) with one or more modes; the
write is one transaction that bumps the row's version and appends ``LabelHistory`` rows (entity
``error_mode_label``) through the one versioned write of every label
(:func:`workbench.versioned_rows.write_versioned`).  The history has no
ALM column, so the answer's ALM run is recorded in its ``category_id`` as ``alm_run:<id>`` (an
answer is addressed by clip and ALM the way a category label is addressed by clip and category;
``labels_as_of`` keeps the two ALMs of one clip apart).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlmodel import select

from storage import Store
from storage.models import AlmRun, Annotator, Clip, ErrorModeLabel, JudgeErrorMode, Prediction
from workbench.errors import InputError
from workbench.studies.taxonomy import MODES, RIGHT_RADIUS_KM, TAXONOMY
from workbench.labels import UNSET, LabelChange
from workbench.versioned_rows import FieldHistory, write_versioned

ENTITY = "error_mode_label"



def canonical_modes(modes: Iterable[str] | str | None) -> str | None:
    """Validate modes and return them in taxonomy order, comma-separated (None for none).

    Accepts codes or display names, in any case, as a list or a comma-separated string.

    Raises
    ------
    InputError
        A mode is not in the taxonomy (the message lists the codes).
    """
    if modes is None:
        return None
    items = modes.split(",") if isinstance(modes, str) else list(modes)
    by_name = {v[0].lower(): k for k, v in TAXONOMY.items()}
    chosen = set()
    for item in items:
        text = str(item).strip().lower()
        if not text:
            continue
        code = text.replace("-", "_").replace(" ", "_")
        code = code if code in TAXONOMY else by_name.get(text)
        if code is None:
            raise InputError(f"error mode {item!r} is not in the taxonomy; use {', '.join(MODES)}")
        chosen.add(code)
    return ",".join(m for m in MODES if m in chosen) or None


def split_modes(text: str | None) -> list[str]:
    """The codes of a stored ``modes`` value."""
    return [m for m in (text or "").split(",") if m]


@dataclass(frozen=True)
class ErrorModeView:
    """One expert's error modes on one ALM answer."""

    annotator_id: int
    clip_id: int
    alm_run_id: int
    modes: tuple[str, ...]
    note: str | None
    version: int


def history_key(alm_run_id: int) -> str:
    """The ``category_id`` under which an answer's ALM run is kept in the label history."""
    return f"alm_run:{alm_run_id}"


class ErrorModeService:
    """Reads and writes the experts' error-mode labels of one project."""

    def __init__(self, store: Store, *, write_wait_s: float | None = None) -> None:
        self.store = store
        self.write_wait_s = write_wait_s

    def alm_run_id(self, model: str) -> int:
        """The id of the ALM run called ``model`` (a one-line error naming the known ones otherwise)."""
        with self.store.session() as s:
            runs = s.exec(select(AlmRun)).all()
        for r in runs:
            if r.model == model:
                return int(r.id)
        raise InputError(f"--alm {model!r}: no ALM run of that name; known: {', '.join(sorted(r.model for r in runs))}")

    def set_error_modes(
        self,
        annotator_id: int,
        clip_id: int,
        alm_run_id: int,
        *,
        modes: Any = UNSET,
        note: Any = UNSET,
        command_id: str | None = None,
        action: str = "do",
        expected_version: int | None = None,
        force: bool = False,
    ) -> LabelChange:
        """Set an expert's error modes (and/or note) of one ALM answer; one transaction with history.

        ``modes`` is a list of codes (or None / an empty list to clear); ``other`` needs a note.
        New modes are checked against the answer (:func:`check_modes`; ``force`` lets the modes
        of a wrong answer stand on a right one, never Refusal on an answer that gives a place);
        an undo or redo writes back what was stored. ``expected_version`` works as in
        :meth:`workbench.labels.LabelService.set_category_label`.
        """
        values: dict[str, Any] = {}
        if modes is not UNSET:
            values["modes"] = canonical_modes(modes)
            if action == "do" and values["modes"]:
                check_modes(self.store, clip_id, alm_run_id, split_modes(values["modes"]), force=force)
        if note is not UNSET:
            if note is not None and not isinstance(note, str):
                raise InputError(f"note must be text, got {type(note).__name__}")
            values["note"] = (note or "").strip() or None
        if not values:
            raise InputError("nothing to change: give error modes or a note")

        def prepare(row: ErrorModeLabel, values: dict[str, Any]) -> dict[str, Any]:
            final_modes = values.get("modes", row.modes)
            final_note = values.get("note", row.note)
            if "other" in split_modes(final_modes) and not final_note:
                raise InputError("error mode 'other' needs a note saying what went wrong (--note TEXT)")
            return values

        written = write_versioned(
            self.store, ErrorModeLabel, {"annotator_id": annotator_id, "clip_id": clip_id, "alm_run_id": alm_run_id},
            values, what="this error-mode label", prepare=prepare,
            history=FieldHistory(ENTITY, annotator_id, clip_id, history_key(alm_run_id)),
            expected_version=expected_version, action=action, command_id=command_id, wait_s=self.write_wait_s,
            refs=((Annotator, annotator_id, "annotator"), (Clip, clip_id, "clip"), (AlmRun, alm_run_id, "ALM run")),
        )
        return LabelChange(entity=ENTITY, annotator_id=annotator_id, clip_id=clip_id,
                           category_id=history_key(alm_run_id), old=written.old, new=written.new,
                           command_id=written.command_id, version=written.version)

    def labels(self, *, clip_id: int | None = None, alm_run_id: int | None = None,
               annotator_id: int | None = None) -> list[ErrorModeView]:
        """Stored error-mode labels (rows cleared to no mode and no note are left out)."""
        query = select(ErrorModeLabel)
        if clip_id is not None:
            query = query.where(ErrorModeLabel.clip_id == clip_id)
        if alm_run_id is not None:
            query = query.where(ErrorModeLabel.alm_run_id == alm_run_id)
        if annotator_id is not None:
            query = query.where(ErrorModeLabel.annotator_id == annotator_id)
        with self.store.session() as s:
            rows = s.exec(query.order_by(ErrorModeLabel.clip_id, ErrorModeLabel.alm_run_id,
                                         ErrorModeLabel.annotator_id)).all()
        return [ErrorModeView(r.annotator_id, r.clip_id, r.alm_run_id, tuple(split_modes(r.modes)), r.note,
                              r.version) for r in rows if r.modes or r.note]

    def version(self, annotator_id: int, clip_id: int, alm_run_id: int) -> int:
        """The row version an edit is based on (0: no row yet)."""
        with self.store.session() as s:
            row = s.exec(select(ErrorModeLabel).where(
                ErrorModeLabel.annotator_id == annotator_id, ErrorModeLabel.clip_id == clip_id,
                ErrorModeLabel.alm_run_id == alm_run_id)).first()
        return 0 if row is None else int(row.version or 0)


# --------------------------------------------------------------------------- analysis


def error_mode_table(store: Store) -> pd.DataFrame:
    """Every rater's modes per ALM answer, long: clip_id, clip_key, alm, rater, rater_kind, mode, present.

    Experts are named by pseudonym; LLM judges as ``judge:<name>`` with their latest ok reply.
    A rater who tagged an answer has one row per taxonomy mode (present True/False), so
    "did not choose" is data, while an answer a rater never tagged has no rows (missing).
    """
    with store.session() as s:
        experts = s.exec(select(ErrorModeLabel, Annotator.pseudonym).join(
            Annotator, Annotator.id == ErrorModeLabel.annotator_id)).all()
        judged = s.exec(select(JudgeErrorMode).where(JudgeErrorMode.status == "ok").order_by(
            JudgeErrorMode.created_at, JudgeErrorMode.id)).all()
        alms = {r.id: r.model for r in s.exec(select(AlmRun)).all()}
        keys = dict(s.exec(select(Clip.id, Clip.key)).all())
    rows: list[tuple] = []
    for label, pseudonym in experts:
        if not label.modes:
            continue
        chosen = set(split_modes(label.modes))
        rows += [(label.clip_id, keys.get(label.clip_id), alms.get(label.alm_run_id), f"expert:{pseudonym}", "expert",
                  m, m in chosen) for m in MODES]
    latest: dict[tuple, JudgeErrorMode] = {}
    for j in judged:
        latest[(j.judge_name, j.clip_id, j.alm_run_id)] = j
    for (judge, clip_id, alm_run_id), j in sorted(latest.items()):
        chosen = set(split_modes(j.modes))
        rows += [(clip_id, keys.get(clip_id), alms.get(alm_run_id), f"judge:{judge}", "judge", m, m in chosen)
                 for m in MODES]
    return pd.DataFrame(rows, columns=["clip_id", "clip_key", "alm", "rater", "rater_kind", "mode", "present"])


def error_mode_shares(table: pd.DataFrame, clips: pd.DataFrame, kind: str = "expert") -> pd.DataFrame:
    """Share of tagged answers showing each mode, per ALM, overall and by continent and speech.

    Each answer counts once: with several raters, a mode's weight on the answer is the share
    of its raters who chose it.  ``clips`` has clip_id, continent, speech (the agreement's clip
    table).  Returns alm, breakdown (all / continent / speech), group, mode, share, n_answers.
    """
    part = table[table["rater_kind"] == kind]
    columns = ["alm", "breakdown", "group", "mode", "share", "n_answers"]
    if part.empty:
        return pd.DataFrame(columns=columns)
    per_answer = part.groupby(["alm", "clip_id", "mode"])["present"].mean().reset_index()
    info = clips.set_index("clip_id")
    per_answer["continent"] = per_answer["clip_id"].map(info["continent"]).fillna("unknown")
    per_answer["speech"] = per_answer["clip_id"].map(info["speech"]).map({True: "speech", False: "no speech"}).fillna(
        "unknown")
    per_answer["all"] = "all"
    out = []
    for breakdown in ("all", "continent", "speech"):
        grouped = per_answer.groupby(["alm", breakdown, "mode"])
        frame = grouped["present"].mean().rename("share").to_frame()
        frame["n_answers"] = grouped["clip_id"].nunique()
        frame = frame.reset_index().rename(columns={breakdown: "group"})
        frame["breakdown"] = breakdown
        out.append(frame[columns])
    result = pd.concat(out, ignore_index=True)
    order = {m: i for i, m in enumerate(MODES)}
    return result.sort_values(["alm", "breakdown", "group", "mode"], key=lambda c: c.map(order) if c.name == "mode"
                              else c).reset_index(drop=True)


def error_mode_agreement(table: pd.DataFrame) -> pd.DataFrame:
    """Agreement on each mode (present/absent) between every pair of raters, and Krippendorff's α over all.

    Returns mode, rater_a, rater_b (``(all)`` for α), coefficient, value, n_units, reason; a value
    below the agreement minimums (:mod:`workbench.agreement.minimums`) or undefined (a constant
    rater) is NaN with its reason.
    """
    from workbench.agreement import minimums, stats

    rows = []
    if table.empty:
        return pd.DataFrame(columns=["mode", "rater_a", "rater_b", "coefficient", "value", "n_units", "reason"])
    table = table.assign(unit=table["alm"].astype(str) + "|" + table["clip_key"].astype(str))
    for mode, part in table.groupby("mode", sort=False):
        wide = part.pivot_table(index="unit", columns="rater", values="present", aggfunc="first")
        raters = list(wide.columns)
        for i, a in enumerate(raters):
            for b in raters[i + 1:]:
                both = wide[[a, b]].dropna()
                if both.empty:
                    continue
                x, y = both[a].astype(int).tolist(), both[b].astype(int).tolist()
                kappa = stats.cohen_kappa(x, y, labels=[0, 1])
                rows.append((mode, a, b, "cohen_kappa", kappa, len(both)))
                rows.append((mode, a, b, "percent_agreement", stats.percent_agreement(x, y), len(both)))
        if len(raters) >= 2:
            data = wide.T.to_numpy(dtype=float)
            alpha = stats.krippendorff_alpha(data, "nominal")
            pairable = int(((~pd.isna(wide)).sum(axis=1) >= 2).sum())
            rows.append((mode, "(all)", "(all)", "krippendorff_alpha", alpha, pairable))
    frame = pd.DataFrame(rows, columns=["mode", "rater_a", "rater_b", "coefficient", "value", "n_units"])
    frame["value"] = frame["value"].astype(float)
    reasons = [minimums.reason(c, int(n), 2) or (None if v == v else "undefined on these data")
               for c, n, v in zip(frame["coefficient"], frame["n_units"], frame["value"])]
    frame["reason"] = reasons
    frame.loc[frame["reason"].notna(), "value"] = float("nan")
    return frame


def wrong_answers(store: Store, alm_run_id: int, *, gamma_km: float = RIGHT_RADIUS_KM) -> list[dict[str, Any]]:
    """The ALM's answers that are wrong (error ≥ γ km) or refused (a refusal value, or unparsable).

    Returns clip_id, clip_key, error_km (None when undefined), refused, reasoning and the
    predicted and true places, in clip-key order.
    """
    from workbench.metrics.distance import stored_answer

    with store.session() as s:
        rows = s.exec(select(Prediction, Clip).join(Clip, Clip.id == Prediction.clip_id).where(
            Prediction.alm_run_id == alm_run_id).order_by(Clip.key)).all()
    out = []
    for p, clip in rows:
        # The one rule (workbench.metrics.distance), measured from the clip; refused: no place named.
        score = stored_answer(p, clip)
        refused, error = not score.located, score.distance_km
        if refused or error is None or error >= gamma_km:
            out.append({"clip_id": p.clip_id, "clip_key": clip.key, "error_km": None if refused else error,
                        "refused": refused,
                        "reasoning": p.reasoning or p.model_output or "", "predicted_city": p.predicted_city,
                        "predicted_country": p.predicted_country, "predicted_latitude": p.predicted_latitude,
                        "predicted_longitude": p.predicted_longitude, "true_city": p.true_city,
                        "true_country": p.true_country, "true_latitude": p.true_latitude,
                        "true_longitude": p.true_longitude})
    return out


def check_modes(store: Store, clip_id: int, alm_run_id: int, modes: Sequence[str], *, force: bool = False) -> None:
    """Refuse error modes that contradict the answer they tag.

    Refusal only on a refused answer (no place given, or none readable); any other mode of a
    wrong answer is refused on an answer within :data:`RIGHT_RADIUS_KM` of the truth unless
    ``force`` (an expert may judge a right answer's reasoning faulty, but must say so).

    Raises
    ------
    InputError
        The ALM has no answer on the clip, or a mode does not fit the answer.
    """
    from workbench.metrics.distance import stored_answer

    with store.session() as s:
        p = s.exec(select(Prediction).where(Prediction.alm_run_id == alm_run_id,
                                            Prediction.clip_id == clip_id)).first()
        model = s.get(AlmRun, alm_run_id)
        clip = s.get(Clip, clip_id)
    name = model.model if model is not None else f"ALM run {alm_run_id}"
    if p is None:
        raise InputError(f"{name} has no answer on this clip; error modes tag an answer")
    # The one rule (workbench.metrics.distance), measured from the clip: Refusal tags an answer
    # that names no place (no readable coordinates), as the distance error counts it.
    score = stored_answer(p, clip)
    error = score.distance_km
    refused = not score.located
    if "refusal" in modes and not refused:
        raise InputError(f"mode refusal: {name} gave a place on this clip ({error:,.0f} km from the truth); "
                         "Refusal is only for an answer without a location")
    if not refused and error is not None and error < RIGHT_RADIUS_KM and not force:
        raise InputError(f"{name}'s answer is {error:,.0f} km from the truth, within the {RIGHT_RADIUS_KM:,.0f} km "
                         "of a right answer; error modes tag wrong answers (--force to tag it anyway)")


def describe(codes: Sequence[str]) -> str:
    """Display names of codes, for people."""
    return ", ".join(TAXONOMY[c][0] for c in codes if c in TAXONOMY) or "none"


def bundle_tables(store: Store, data: Any) -> dict[str, pd.DataFrame]:
    """Error-mode labels of experts and judges, their agreement per mode and the shares per ALM,
    for the agreement bundle when anyone tagged error modes (experts named as in the rest of the
    bundle: ``data`` is its :class:`~workbench.agreement.units.RatingData`).

    Passed to :func:`workbench.agreement.service.export_agreement` by its callers.
    """
    table = error_mode_table(store)
    if table.empty:
        return {}
    names = {f"expert:{a['pseudonym']}": a["rater"] for a in data.annotators}
    table["rater"] = table["rater"].map(lambda r: names.get(r, r))
    return {
        "error_modes_long": table,
        "error_mode_agreement": error_mode_agreement(table),
        "error_mode_shares": error_mode_shares(table, data.clips, "expert"),
    }
