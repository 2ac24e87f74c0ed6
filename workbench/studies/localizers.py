"""Humans as localizers: an annotator's blind guess of where a clip was recorded, scored like an ALM.

A guess (latitude, longitude, a confidence in [0, 1], optionally the city, country and
continent) is a human label: one transaction, a version, ``LabelHistory`` rows (entity
``human_guess``; :func:`workbench.versioned_rows.write_versioned`), undo through
:class:`workbench.commands.SetHumanGuess`.  Scores use the leaderboard's own formulas
(:func:`workbench.metrics.aggregate.compute_metrics`) on records built from the guesses and the
clips' true locations, one row per annotator (``human:<pseudonym>``) and one pooled over
everyone (``human (pooled)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from storage import Store
from storage import tables as T
from workbench.errors import InputError
from workbench.strict_numbers import check_float, check_text, parse_float

if TYPE_CHECKING:
    import pandas as pd

    from workbench.country_aliases import AliasTable
    from workbench.labels import LabelChange

ENTITY = "human_guess"
FIELDS = ("latitude", "longitude", "confidence", "city", "country", "continent")


def _check(values: dict[str, Any]) -> dict[str, Any]:
    # The write side loads the ORM models; the leaderboard's reads below start without them (issue 32).
    from workbench.labels import UNSET

    clean = {}
    for name, value in values.items():
        if value is UNSET:
            continue
        if name in ("latitude", "longitude", "confidence") and value is not None:
            # strict: ASCII decimal text or a real number, finite and in range (workbench/strict_numbers.py)
            low, high = {"latitude": (-90.0, 90.0), "longitude": (-180.0, 180.0), "confidence": (0.0, 1.0)}[name]
            if isinstance(value, str):
                value = parse_float(value.strip(), "guess", name, minimum=low, maximum=high)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                number = float(value) if isinstance(value, float) or abs(value) < 2**63 else math.inf
                value = check_float(number, "guess", name, minimum=low, maximum=high)
            else:
                raise InputError(f"guess: {name} must be a number, got {value!r}")
        elif value is not None:
            value = check_text(str(value), "guess", name).strip() or None
        clean[name] = value
    return clean


def check_guess(values: dict[str, Any]) -> dict[str, Any]:
    """The guess fields ``values`` as they would be stored, or the one-line error (nothing is written)."""
    return _check(values)


class GuessService:
    """Reads and writes annotators' location guesses of one project."""

    def __init__(self, store: Store, *, write_wait_s: float | None = None) -> None:
        self.store = store
        self.write_wait_s = write_wait_s

    def set_guess(self, annotator_id: int, clip_id: int, *, command_id: str | None = None, action: str = "do",
                  expected_version: int | None = None, **values: Any) -> LabelChange:
        """Set (part of) a guess; latitude and longitude go together; one transaction with history."""
        from storage.models import Annotator, Clip, HumanGuess
        from workbench.labels import LabelChange
        from workbench.versioned_rows import FieldHistory, write_versioned

        unknown = set(values) - set(FIELDS)
        if unknown:
            raise InputError(f"unknown guess field(s) {', '.join(sorted(unknown))}; use {', '.join(FIELDS)}")
        clean = _check(values)
        if not clean:
            raise InputError("nothing to change: give --lat/--lon, --confidence or a place")
        if ("latitude" in clean) != ("longitude" in clean):
            raise InputError("give latitude and longitude together")
        written = write_versioned(
            self.store, HumanGuess, {"annotator_id": annotator_id, "clip_id": clip_id}, clean, what="this guess",
            history=FieldHistory(ENTITY, annotator_id, clip_id), expected_version=expected_version, action=action,
            command_id=command_id, wait_s=self.write_wait_s,
            refs=((Annotator, annotator_id, "annotator"), (Clip, clip_id, "clip")),
        )
        return LabelChange(entity=ENTITY, annotator_id=annotator_id, clip_id=clip_id, category_id=None,
                           old=written.old, new=written.new, command_id=written.command_id, version=written.version)


@dataclass(frozen=True)
class GuessView:
    """One annotator's guess of one clip as the GUI shows it (all None, version 0: no guess yet)."""

    latitude: float | None
    longitude: float | None
    confidence: float | None
    version: int
    error_km: float | None  # geodesic distance to the clip's true location; None when either is unknown

    @property
    def placed(self) -> bool:
        """Whether a position is stored (an undone guess keeps its row with no position)."""
        return self.latitude is not None and self.longitude is not None


def guess_for(store: Store, annotator_id: int, clip_id: int) -> GuessView:
    """The annotator's stored guess of a clip, scored against the clip's true location."""
    from workbench.metrics.distance import answer_distance_km

    guess, clip_table = T.human_guess, T.clip
    with store.read() as connection:
        row = connection.execute(select(guess).where(guess.c.annotator_id == annotator_id,
                                                     guess.c.clip_id == clip_id)).first()
        clip = connection.execute(select(clip_table.c.latitude, clip_table.c.longitude)
                                  .where(clip_table.c.id == clip_id)).first()
        truth = (None, None) if clip is None else (clip.latitude, clip.longitude)
    if row is None:
        return GuessView(None, None, None, 0, None)
    error = None
    if row.latitude is not None and row.longitude is not None and None not in truth:
        error = answer_distance_km(row.latitude, row.longitude, truth[0], truth[1])
    return GuessView(row.latitude, row.longitude, row.confidence, row.version or 0, error)


def gazetteer_places(positions: list[tuple[float, float]]) -> list[tuple[str | None, str | None, str | None]]:
    """(city, country, continent) of each (lat, lon) from the offline gazetteer: the nearest
    GeoNames place (``reverse_geocoder``, as the location check uses it), its country's ISO 3166
    short name (the dataset's naming, e.g. ``Korea, Republic of``) and that country's continent."""
    import pycountry

    from workbench.gazetteer import reverse_geocode
    from workbench.metrics.continents import continent_of_iso

    places = []
    for place in reverse_geocode(positions):
        code = (place.get("cc") or "").upper() or None
        country = pycountry.countries.get(alpha_2=code) if code else None
        places.append((place.get("name") or None, country.name if country is not None else None,
                       continent_of_iso(code)))
    return places


def guess_records(store: Store) -> pd.DataFrame:
    """One row per guess in the leaderboard's record shape, with ``model`` = ``human:<pseudonym>``.

    A guess is scored exactly like an ALM answer: the place names the annotator typed, and for
    those left empty the gazetteer's (:func:`gazetteer_places`) of the guessed position. A
    stored guess is never a refusal (``refused`` False): a refusal is "no guess", and an undone
    guess (no position) is no row at all.
    """
    import pandas as pd

    return pd.DataFrame(_guess_rows(store))


def _guess_rows(store: Store) -> list[dict[str, Any]]:
    """The rows of :func:`guess_records` (no DataFrame: a project without guesses never needs one)."""
    guess, annotator, clip_table = T.human_guess.c, T.annotator.c, T.clip.c
    with store.read() as connection:
        rows = connection.execute(
            select(guess.latitude, guess.longitude, guess.confidence, guess.city, guess.country, guess.continent,
                   annotator.pseudonym, clip_table.key, clip_table.dataset_id,
                   clip_table.latitude.label("clip_latitude"), clip_table.longitude.label("clip_longitude"),
                   clip_table.city.label("clip_city"), clip_table.country.label("clip_country"),
                   clip_table.continent.label("clip_continent"))
            .join(T.annotator, annotator.id == guess.annotator_id).join(T.clip, clip_table.id == guess.clip_id)
        ).all()
    guesses = [g for g in rows if g.latitude is not None and g.longitude is not None]
    places = gazetteer_places([(float(g.latitude), float(g.longitude)) for g in guesses])
    records = []
    for g, (city, country, continent) in zip(guesses, places, strict=True):
        records.append({
            "model": f"human:{g.pseudonym}", "clip_key": g.key, "dataset_id": g.dataset_id,
            "confidence": g.confidence,
            "true_latitude": g.clip_latitude, "true_longitude": g.clip_longitude, "true_city": g.clip_city,
            "true_country": g.clip_country, "true_continent": g.clip_continent,
            "predicted_latitude": repr(float(g.latitude)), "predicted_longitude": repr(float(g.longitude)),
            "predicted_city": g.city or city, "predicted_country": g.country or country,
            "predicted_continent": g.continent or continent, "refused": False,
        })
    return records


def _dataset_sizes(store: Store) -> dict[int, int]:
    from sqlalchemy import func

    clip = T.clip.c
    with store.read() as connection:
        return {int(d): int(n) for d, n in connection.execute(select(clip.dataset_id, func.count())
                                                              .group_by(clip.dataset_id))}


def human_leaderboard(store: Store, profile: str = "agl1k", *, ci: bool = False, bootstrap: int = 2000,
                      seed: int = 0, aliases: AliasTable | None = None) -> list[dict[str, Any]]:
    """Leaderboard rows of the human localizers: one per annotator and one pooled over all guesses.

    Each row has the leaderboard's metric keys (``n``: the guesses counted), ``n_dataset`` (clips
    in the datasets of the guessed clips), ``mean_confidence`` and with ``ci`` the intervals;
    with a country alias table (``aliases``) applied as to the models' answers
    (:mod:`workbench.metrics.aliased`), ``country_alias_n`` and ``continent_alias_n``.
    """
    from workbench.metrics.aggregate import metric_inputs, metrics_of
    from workbench.metrics.aliased import accepted_answers, applies
    from workbench.metrics.intervals import bootstrap_intervals

    guesses = _guess_rows(store)
    if not guesses:
        return []
    import pandas as pd

    records = pd.DataFrame(guesses)
    accepted = None
    if applies(aliases):
        # A guess is measured from its clip's position, which each record carries.
        latitude, longitude = records["true_latitude"].to_numpy(dtype=object), records["true_longitude"].to_numpy(dtype=object)
        accepted = accepted_answers(records["true_country"].to_numpy(dtype=object),
                                    records["predicted_country"].to_numpy(dtype=object), aliases,  # type: ignore[arg-type]
                                    lambda rows: list(zip(latitude[rows].tolist(), longitude[rows].tolist())))
    sizes = _dataset_sizes(store)
    rows = []
    groups = [(name, part) for name, part in records.groupby("model", sort=True)]
    groups.append(("human (pooled)", records))
    for name, part in groups:
        inputs = metric_inputs(part.drop(columns=["model"]).reset_index(drop=True), (profile,),
                               alias_accepted=None if accepted is None else accepted[part.index.to_numpy()])
        metrics = metrics_of(inputs, profile, str(name))
        confidence = part["confidence"].dropna()
        row = {**metrics, "model": str(name), "n": int(len(part)),
               "n_dataset": sum(sizes.get(int(d), 0) for d in set(part["dataset_id"].tolist())),
               "mean_confidence": float(confidence.mean()) if len(confidence) else None}
        if ci:
            row.update(bootstrap_intervals(inputs, profile, bootstrap=bootstrap, seed=seed, name=str(name)))
        rows.append(row)
    return rows


def human_rows(store: Store, profile: str, columns: Any = None, *, ci: bool = False, bootstrap: int = 2000,
               seed: int = 0, aliases: AliasTable | None = None) -> list[dict[str, Any]]:
    """The human localizers' leaderboard rows (per annotator and pooled, with their ``profile``;
    ``both``: one row per profile), as the leaderboard lists them
    (:func:`workbench.studies.board.leaderboard_board`); with ``columns``
    (the leaderboard's), each row has exactly those keys, NaN where a human row has no value."""
    profiles = ("agl1k", "iso") if profile == "both" else (profile,)
    rows = []
    for name in profiles:
        for row in human_leaderboard(store, name, ci=ci, bootstrap=bootstrap, seed=seed, aliases=aliases):
            rows.append({**row, "profile": name})
    if columns is not None and len(columns):
        rows = [{column: row.get(column, math.nan) for column in columns} for row in rows]
    return rows
