"""A web study's crowd on the leaderboard and in ``compare``, scored exactly like the models (issue 38).

design/web-study.md, "Scoring and counting". Every guess of a participant the study analyzes
(:func:`workbench.studies.web_flow.analyzed_participants`, the one owner of the exclusions) on a
scored item becomes a record in the leaderboard's shape: the clip's true fields, the guessed
position and the offline gazetteer's city, country and continent of it
(:func:`workbench.studies.localizers.gazetteer_places`, as for a desktop guess). *I can't tell*
is a refusal recorded as AGL1K's refused answers are ("Unknown" in every predicted field): 10,000 km,
counted in the reject rate and wrong in every accuracy, as a refused ALM answer is. Guesses on the
practice clip are never scored, and guesses on attention clips neither: they serve the exclusion
rules only (a clip whose place a voice names would flatter the crowd).

Rows (:func:`crowd_rows`): ``human (<study>)`` over every analyzed guess (``n`` guesses,
``n_clips``, ``n_participants``); ``human (<study>, consensus)``, each clip answered once by the
crowd's consensus (:func:`geometric_median` of its placed guesses; a refusal when most of its
guesses are refusals); with ``each``, ``human:<study>/<pseudonym>`` per participant. On common
clips (``clips``, ``leaderboard --common``) a clip's score is the mean over its answers, so that a
clip with five guesses weighs as much as a model's one answer; :func:`answer_columns` gives any
human row's records by name (``aglw compare``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import select

from storage import Store
from storage import tables as T

if TYPE_CHECKING:
    from workbench.country_aliases import AliasTable

# A refused answer as AGL1K's result files hold one (a refusal value of workbench.metrics.distance).
REFUSED = "Unknown"
PREDICTED = ("predicted_latitude", "predicted_longitude", "predicted_city", "predicted_country",
             "predicted_continent")
DESKTOP_POOLED = "human (pooled)"


def pooled_name(study: str) -> str:
    return f"human ({study})"


def consensus_name(study: str) -> str:
    return f"human ({study}, consensus)"


def participant_name(study: str, pseudonym: str) -> str:
    return f"human:{study}/{pseudonym}"


# --- the consensus point --------------------------------------------------------------------


def _unit(lat: float, lon: float) -> np.ndarray:
    phi, lam = math.radians(lat), math.radians(lon)
    return np.array([math.cos(phi) * math.cos(lam), math.cos(phi) * math.sin(lam), math.sin(phi)])


def _tangents(x: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At ``x``: each point's tangent component, its length (the sine) and the angle to it (radians).

    The angle as atan2 of sine and cosine: exact near 0 and pi, where arccos of the dot is not.
    """
    dots = points @ x
    tangent = points - np.outer(dots, x)
    sines = np.sqrt(np.einsum("ij,ij->i", tangent, tangent))
    return tangent, sines, np.arctan2(sines, dots)


def _pull(tangent: np.ndarray, sines: np.ndarray, far: np.ndarray) -> np.ndarray:
    """Sum of the unit tangent vectors toward the points ``far`` (those not at the current point)."""
    far = far & (sines > 0)
    return (tangent[far] / sines[far, None]).sum(axis=0)


def geometric_median(positions: Sequence[tuple[float, float]], *, tolerance_rad: float = 1e-9,
                     max_steps: int = 10_000) -> tuple[float, float]:
    """The point (lat, lon in degrees) minimizing the summed great-circle distance to ``positions``.

    Weiszfeld's iteration on the sphere (each step moves along the mean of the tangent vectors
    toward the points, weighted by 1/distance, through the exponential map; it stops when a step
    is under ``tolerance_rad``, 1e-9 rad = 6 mm), started at the best of the points
    themselves; a point of the data is the answer when the pull of the others is no stronger
    than the points sitting there (the first-order condition of the sum of distances). With two
    distinct points every point between them is a minimum: the first of them is returned.
    """
    if not positions:
        raise ValueError("the geometric median of no position")
    points = np.array([_unit(lat, lon) for lat, lon in positions])
    # the best data point, by all pairwise angles at once (its choice needs no precision near 0)
    sums = np.arccos(np.clip(points @ points.T, -1.0, 1.0)).sum(axis=1)
    start = int(np.argmin(sums))
    x = points[start]
    tangent, sines, theta = _tangents(x, points)
    here = theta < 1e-12
    pull = _pull(tangent, sines, ~here)
    best = x
    if np.linalg.norm(pull) > here.sum() + 1e-12:
        # Leave the data point along the pull (Weiszfeld's step is undefined at a data point).
        x = math.cos(1e-6) * x + math.sin(1e-6) * pull / np.linalg.norm(pull)
        for _ in range(max_steps):
            tangent, sines, theta = _tangents(x, points)
            if (theta < 1e-15).any():
                break
            # log map of each point at x: its tangent scaled to the angle; weights 1/angle
            step = (tangent / sines[:, None]).sum(axis=0) / (1.0 / theta).sum()
            size = float(np.linalg.norm(step))
            if size < tolerance_rad:
                break
            x = math.cos(size) * x + math.sin(size) * step / size
            x /= np.linalg.norm(x)
        if float(_tangents(x, points)[2].sum()) <= float(_tangents(best, points)[2].sum()):
            best = x
    lat = math.degrees(math.asin(max(-1.0, min(1.0, float(best[2])))))
    lon = math.degrees(math.atan2(float(best[1]), float(best[0]))) if abs(lat) < 90.0 - 1e-12 else 0.0
    return lat, lon


# --- records ---------------------------------------------------------------------------------


def _analyzed(store: Store, study: str) -> set[int]:
    # The one owner of who is excluded and why (failed headphone check, attention, listening time).
    from workbench.studies.web_flow import analyzed_participants

    return set(analyzed_participants(store, study))


def crowd_records(store: Store, study: str | None = None) -> list[dict[str, Any]]:
    """One record per scored guess of an analyzed participant (every web study, or ``study``).

    Keys: the leaderboard's record fields (``true_*``, ``predicted_*``, ``refused``), ``model``
    (``human:<study>/<pseudonym>``), ``study``, ``participant`` (the pseudonym), ``question_id``
    (the clip's key, what a model's answer is paired by), ``clip_id``, ``dataset_id``,
    ``human_sounds`` and ``confidence``. Ordered by study, participant and clip key.
    """
    from workbench.studies.localizers import gazetteer_places
    from workbench.studies.web_study import study_names

    names = [study] if study is not None else study_names(store)
    g, a, p, c, s = T.web_guess.c, T.web_assignment.c, T.web_participant.c, T.clip.c, T.web_study.c
    found = []
    for name in names:
        analyzed = _analyzed(store, name)
        with store.read() as connection:
            rows = connection.execute(
                select(g.latitude, g.longitude, g.refused, g.confidence, p.id.label("participant_id"), p.pseudonym,
                       c.id.label("clip_id"), c.key, c.dataset_id, c.human_sounds, c.latitude.label("clip_latitude"),
                       c.longitude.label("clip_longitude"), c.city, c.country, c.continent)
                .join(T.web_assignment, a.id == g.assignment_id).join(T.web_participant, p.id == g.participant_id)
                .join(T.web_study, s.id == p.study_id).join(T.clip, c.id == g.clip_id)
                # practice and attention clips are never scored
                .where(s.name == name, a.kind == "item")
                .order_by(p.pseudonym, c.key)).all()
        found += [(name, row) for row in rows if int(row.participant_id) in analyzed]
    placed = [row for _, row in found if not row.refused and row.latitude is not None and row.longitude is not None]
    places = dict(zip((id(r) for r in placed),
                      gazetteer_places([(float(r.latitude), float(r.longitude)) for r in placed]), strict=True))
    records = []
    for name, row in found:
        place = places.get(id(row))
        if place is None:
            predicted = dict.fromkeys(PREDICTED, REFUSED)
        else:
            predicted = {"predicted_latitude": repr(float(row.latitude)),
                         "predicted_longitude": repr(float(row.longitude)),
                         "predicted_city": place[0], "predicted_country": place[1], "predicted_continent": place[2]}
        records.append({
            "model": participant_name(name, row.pseudonym), "study": name, "participant": row.pseudonym,
            "question_id": row.key, "clip_id": int(row.clip_id), "dataset_id": row.dataset_id,
            "human_sounds": row.human_sounds, "confidence": row.confidence,
            "true_latitude": row.clip_latitude, "true_longitude": row.clip_longitude, "true_city": row.city,
            "true_country": row.country, "true_continent": row.continent,
            **predicted, "refused": place is None,
        })
    return records


def consensus_records(records: Sequence[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """One record per clip of ``records`` (one study's guesses): the crowd's consensus answer.

    A refusal when more than half of the clip's guesses are refusals; otherwise the geometric
    median of its placed guesses, with the gazetteer's place names of that point.
    """
    from workbench.studies.localizers import gazetteer_places

    by_clip: dict[Any, list[dict[str, Any]]] = {}
    for record in records:
        by_clip.setdefault(record["question_id"], []).append(record)
    out, points = [], []
    for key in sorted(by_clip):
        guesses = by_clip[key]
        refused = sum(1 for g in guesses if g["refused"])
        first = guesses[0]
        confidences = [g["confidence"] for g in guesses if g["confidence"] is not None]
        record = {**{k: first[k] for k in ("question_id", "clip_id", "dataset_id", "human_sounds", "true_latitude",
                                          "true_longitude", "true_city", "true_country", "true_continent")},
                  "model": name, "participant": None, "members": tuple(sorted({g["participant"] for g in guesses})),
                  "confidence": float(np.mean(confidences)) if confidences else None, "n_guesses": len(guesses)}
        if 2 * refused > len(guesses):
            record.update(dict.fromkeys(PREDICTED, REFUSED), refused=True)
        else:
            point = geometric_median([(float(g["predicted_latitude"]), float(g["predicted_longitude"]))
                                      for g in guesses if not g["refused"]])
            points.append((len(out), point))
            record.update(predicted_latitude=repr(point[0]), predicted_longitude=repr(point[1]), refused=False)
        out.append(record)
    for (index, _), (city, country, continent) in zip(points, gazetteer_places([p for _, p in points]), strict=True):
        out[index].update(predicted_city=city, predicted_country=country, predicted_continent=continent)
    return out


def answer_sets(store: Store, *, each: bool = False, desktop: bool = False,
                studies: Collection[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Row name -> its records: per web study the pooled and the consensus rows (and with ``each``
    one per participant); with ``desktop`` the desktop localizers' rows too (``human:<pseudonym>``
    and ``human (pooled)``, :func:`workbench.studies.localizers.guess_records`, never a web
    participant). A study without an analyzed guess has no rows."""
    from workbench.studies.web_study import study_names

    sets: dict[str, list[dict[str, Any]]] = {}
    if desktop:
        from workbench.studies.localizers import guess_records

        frame = guess_records(store)
        if len(frame):
            c = T.clip.c
            with store.read() as connection:
                speech = {(d, k): h for d, k, h in connection.execute(select(c.dataset_id, c.key, c.human_sounds))}
            desk = [{**r, "question_id": r["clip_key"], "participant": r["model"].split(":", 1)[1],
                     "human_sounds": speech.get((r["dataset_id"], r["clip_key"]))} for r in frame.to_dict("records")]
            for record in desk:
                sets.setdefault(record["model"], []).append(record)
            sets = dict(sorted(sets.items()))
            sets[DESKTOP_POOLED] = desk
    for study in study_names(store):
        if studies is not None and study not in studies:
            continue
        records = crowd_records(store, study)
        if not records:
            continue
        sets[pooled_name(study)] = records
        sets[consensus_name(study)] = consensus_records(records, consensus_name(study))
        if each:
            for record in records:
                sets.setdefault(record["model"], []).append(record)
    return sets


def human_row_names(store: Store) -> list[str]:
    """Every human row the leaderboard can print (desktop and web, with ``--humans each``)."""
    return list(answer_sets(store, each=True, desktop=True))


def answer_columns(records: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Records as one object array per field (what :func:`~workbench.metrics.aggregate.metric_inputs` reads)."""
    from workbench.metrics.records import object_array

    names = ["question_id", "true_latitude", "true_longitude", "true_city", "true_country", "true_continent",
             *PREDICTED, "refused", "dataset_id", "human_sounds", "confidence"]
    return {name: object_array([r.get(name) for r in records]) for name in names}


def accepted(columns: dict[str, np.ndarray], aliases: AliasTable | None) -> np.ndarray | None:
    """Per record: accepted under the country alias table, measured from the clip's position each
    record carries (as :func:`workbench.studies.localizers.human_leaderboard` applies it)."""
    from workbench.metrics.aliased import accepted_answers, applies

    if not applies(aliases):
        return None
    latitude, longitude = columns["true_latitude"], columns["true_longitude"]
    return accepted_answers(columns["true_country"], columns["predicted_country"], aliases,  # type: ignore[arg-type]
                            lambda rows: list(zip(latitude[rows].tolist(), longitude[rows].tolist())))


def _columns_of(records: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    from workbench.metrics.records import object_array

    columns = answer_columns(records)
    columns["members"] = object_array([tuple(r["members"]) if "members" in r else
                                       ((r["participant"],) if r.get("participant") else ()) for r in records])
    return columns


def scored_rows(store: Store, sets: dict[str, list[dict[str, Any]]], profile: str, *, by: str | None = None,
                clips: Collection[Any] | None = None, ci: bool = False, bootstrap: int = 2000, seed: int = 0,
                aliases: AliasTable | None = None, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Leaderboard rows of the named answer sets (:func:`answer_sets`), scored by the leaderboard's
    formulas (:func:`workbench.metrics.answer_sets.answer_set_rows`); ``profile`` ``both``: one row
    per profile. With ``columns`` (the leaderboard's), each row has exactly those keys (NaN where
    it has no value) and ``n_clips``, ``n_participants``."""
    from workbench.metrics.answer_sets import answer_set_rows
    from workbench.metrics.keys import PROFILES
    from workbench.metrics.service import dataset_sizes, group_labels

    profiles = PROFILES if profile == "both" else (profile,)
    sizes: dict[str, dict[tuple[Any, Any], int]] = {}

    def coverage(name: str, datasets: set[Any], group: Any) -> int | None:
        if name not in sizes:
            sizes[name] = dataset_sizes(store, name, by)
        return sum(sizes[name].get((d, group), 0) for d in datasets) if datasets else None

    rows = []
    for name, records in sets.items():
        data = _columns_of(records)
        groups = None if by is None else (lambda p, data=data: group_labels(data, p, by))
        rows += answer_set_rows(name, data, profiles, groups=groups, clips=clips, ci=ci, bootstrap=bootstrap,
                                seed=seed, accepted=accepted(data, aliases), coverage=coverage)
    if columns is not None and len(columns):
        keep = [*columns, *(k for k in ("n_clips", "n_participants") if k not in columns)]
        rows = [{column: row.get(column, math.nan) for column in keep} for row in rows]
    return rows


def crowd_rows(store: Store, profile: str, *, each: bool = False, by: str | None = None,
               clips: Collection[Any] | None = None, ci: bool = False, bootstrap: int = 2000, seed: int = 0,
               aliases: AliasTable | None = None, columns: Sequence[str] | None = None,
               studies: Collection[str] | None = None) -> list[dict[str, Any]]:
    """The web studies' leaderboard rows: per study ``human (<study>)`` and ``human (<study>,
    consensus)``, with ``each`` also ``human:<study>/<pseudonym>`` per analyzed participant.

    Rows carry the leaderboard's keys (``n``: the answers counted), ``n_clips`` and
    ``n_participants``; ``clips``: ranked on those clips only, a clip's score the mean over its
    answers (``--common``). See :func:`scored_rows` for the other parameters.
    """
    sets = answer_sets(store, each=each, studies=studies)
    return scored_rows(store, sets, profile, by=by, clips=clips, ci=ci, bootstrap=bootstrap, seed=seed,
                       aliases=aliases, columns=columns)


def compare_rows(store: Store, row_a: str, row_b: str, *, aliases: AliasTable | None = None,
                 **options: Any) -> dict[str, Any]:
    """:func:`workbench.metrics.compare.compare_models` of any two rows the leaderboard prints:
    stored models, the desktop's ``human:<pseudonym>`` and ``human (pooled)``, a web study's
    ``human (<study>)``, ``human (<study>, consensus)`` and ``human:<study>/<pseudonym>``."""
    from workbench.errors import AglwError
    from workbench.metrics.compare import compare_models
    from workbench.metrics.service import model_names

    models = set(model_names(store))
    wanted = [name for name in dict.fromkeys((row_a, row_b)) if name not in models and name.startswith("human")]
    answers, ok = {}, {}
    if wanted:
        sets = answer_sets(store, each=True, desktop=True)
        unknown = [name for name in wanted if name not in sets]
        if unknown:
            known = ", ".join([*sorted(models), *sets]) or "none yet"
            raise AglwError(f"no answers for row(s) {', '.join(map(repr, unknown))} (rows: {known})")
        for name in wanted:
            answers[name] = _columns_of(sets[name])
            ok[name] = accepted(answers[name], aliases)
    return compare_models(store, row_a, row_b, aliases=aliases, answers=answers, accepted=ok, **options)
