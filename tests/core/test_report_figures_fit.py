"""Every figure of the study report, drawn with the longest names the project holds, keeps its text
inside the canvas, never on another text and never on an axis line (issue 39).

The figure functions are found, not listed: every public function of ``workbench.studies.figures``
and its sibling modules ``figures_*`` that returns PNG bytes. A new one without inputs here fails
:func:`test_every_figure_function_of_the_report_has_inputs_here`. Each figure is measured through
matplotlib's renderer at the moment it is saved (the text and lines actually drawn).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from itertools import combinations
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

import workbench.studies

# The longest names a project holds in practice: a study name at its limit (64 characters), judge
# and model names as providers spell them, an annotator pseudonym, a category id with its name.
STUDY = "crowd-baseline-agl1k-europe-and-asia-second-wave_2026-11-29.final"[:64]
JUDGES = ("gemini-2.5-pro-preview-06-05-thinking-budget-32k", "claude-3-7-sonnet-20250219-extended-thinking",
          "qwen2.5-omni-7b-instruct-awq-int4-local")
MODEL = "gemini-3-pro-preview-11-2025-audio-native-thinking"
EXPERT = "expert:annotator-00a7"
CATEGORY = "/m/0ch8v Outside, urban or manmade"


def _figure_modules() -> list[Any]:
    names = ["workbench.studies.figures"] + sorted(
        f"workbench.studies.{m.name}" for m in pkgutil.iter_modules(workbench.studies.__path__)
        if m.name.startswith("figures_"))
    return [importlib.import_module(name) for name in names]


def figure_functions() -> dict[str, Callable[..., bytes]]:
    """Every public function of the report's figure modules that returns PNG bytes (the PNG helper aside)."""
    found = {}
    for module in _figure_modules():
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("_") or function.__module__ != module.__name__ or name == "png_bytes":
                continue
            if inspect.signature(function).return_annotation in ("bytes", bytes):
                found[f"{module.__name__.rsplit('.', 1)[1]}.{name}"] = function
    return found


def _sweep() -> Any:
    from workbench.studies.sensitivity import SweepResult

    gammas, alphas, thetas = list(np.geomspace(250, 4000, 10)), list(np.linspace(0, 0.2, 10)), [-1.97, 0.0, 2.3]
    rows = [{"gamma_km": g, "alpha": a, "theta": t, "n_selected": 3, "jaccard": (i % 7) / 6, "n_added": 0,
             "n_removed": 0, "speech_share": 0.5, "n_flipped": 0, "flipped": ""}
            for i, (g, a, t) in enumerate((g, a, t) for g in gammas for a in alphas for t in thetas)]
    return SweepResult(pd.DataFrame(rows), gammas, alphas, thetas,
                       {"gamma_km": gammas[5], "alpha": alphas[2], "theta": 0.0, "n_selected": 3})


def _shares() -> pd.DataFrame:
    from workbench.studies.error_modes import MODES

    rows = []
    for breakdown, groups in (("all", ["all"]), ("continent", ["Europe", "Asia", "South America"]),
                              ("speech", ["speech", "no speech"])):
        for k, alm in enumerate((MODEL, JUDGES[0])):
            for group in groups:
                for j, mode in enumerate(MODES):
                    rows.append({"breakdown": breakdown, "alm": alm, "group": group, "mode": mode,
                                 "share": ((j + k) % 4) / 4, "n_answers": 3 + 7 * k})
    return pd.DataFrame(rows)


def _baseline(label: str) -> pd.DataFrame:
    raters = [EXPERT, "expert:annotator-00b3", "expert_consensus_others", *(f"judge:{j}" for j in JUDGES),
              f"judge:{JUDGES[0]}@run1", "judge_mean"]
    sections = {"expert": "expert-expert", "judge": "judge-judge"}
    rows = []
    for i, (a, b) in enumerate(combinations(raters, 2)):
        kinds = {a.split(":")[0].split("_")[0], b.split(":")[0].split("_")[0]}
        section = ("test-retest" if "@run1" in b else sections[kinds.pop()] if len(kinds) == 1 else "expert-judge")
        reported = i % 5 != 3
        value = 0.2 + (i % 9) / 10 if reported else float("nan")
        rows.append({"label": label, "section": section, "rater_a": a, "rater_b": b,
                     "coefficient": "weighted_kappa_quadratic" if label == "contribution" else "cohen_kappa",
                     "value": value, "ci_low": value - 0.35, "ci_high": min(value + 0.2, 1.0), "n_units": 40,
                     "n_clips": 40, "reason": None if reported else "needs at least 5 units"})
    return pd.DataFrame(rows)


def _alt_rows() -> list[dict]:
    return [{"label": label, "llm": llm, "winning_rate": 0.25 * k, "advantage_probability": 0.9 - 0.1 * k,
             "refused": None} for label in ("contribution", "effect")
            for k, llm in enumerate([*(f"judge:{j}" for j in JUDGES), "judge_mean"])]


def _confusion() -> pd.DataFrame:
    values = ["helped", "misled", "neutral", "not applicable"]
    return pd.DataFrame(np.arange(16).reshape(4, 4) * 37, index=values, columns=values)


def _flow() -> tuple[dict, dict]:
    from workbench.studies import web_flow

    counts = {"invited": 12345, "started": 11111, "consented": 10987, "passed_headphones": 9876,
              "finished": 8765, "excluded": 1234, "analyzed": 7531}
    details = {"open_link": 4321, "not_started": 1234, "no_consent": 124, "failed_headphones": 1111,
               "headphones_pending": 12, "screened_out": 1111, "in_progress": 99,
               "excluded_by": {"headphones_failed": 1000, "max_attention_missed": 200, "min_median_listen_s": 100},
               "analyzed_rule": web_flow.ANALYZED_RULE, "headphone_check": "screen"}
    return counts, details


def _crowd_frame() -> pd.DataFrame:
    rows = []
    for model in (MODEL, JUDGES[2]):
        for breakdown, groups in (("continent", ["Africa", "Asia", "Europe", "North America", "Oceania",
                                                 "South America"]), ("speech", ["speech", "no speech"])):
            for k, group in enumerate(groups):
                rows.append({"study": STUDY, "model": model, "breakdown": breakdown, "group": group,
                             "n_clips": 120 + k, "crowd_n": 3 + 100 * k, "crowd_distance_error_km": 2500.0 + 900 * k,
                             "model_n": 2 + 50 * k, "model_distance_error_km": 3100.0 + 400 * k})
    return pd.DataFrame(rows)


CASES: dict[str, list[Callable[[], tuple]]] = {
    "figures.sensitivity_heatmaps": [lambda: (_sweep(),)],
    "figures.error_mode_bars": [lambda: (_shares(), "all"), lambda: (_shares(), "continent"),
                                lambda: (_shares(), "speech"), lambda: (_shares().iloc[0:0], "all")],
    "figures.baseline_forest": [lambda: (_baseline("contribution"), "contribution"),
                                lambda: (_baseline("effect"), "effect")],
    "figures.alt_test_bars": [lambda: (_alt_rows(),), lambda: ([],)],
    "figures.confusion": [lambda: (_confusion(), f"effect · {CATEGORY}")],
    "figures_crowd.participant_flow": [lambda: (STUDY, "study", *_flow())],
    "figures_crowd.crowd_vs_models": [lambda: (_crowd_frame(), STUDY, "continent"),
                                      lambda: (_crowd_frame(), STUDY, "speech"),
                                      lambda: (_crowd_frame().iloc[0:0], STUDY, "speech")],
}


def test_every_figure_function_of_the_report_has_inputs_here() -> None:
    missing = sorted(set(figure_functions()) - set(CASES))
    assert not missing, f"give these figure functions inputs with the longest names in CASES: {missing}"


class Drawn:
    """The text and the lines each figure drew (recorded while it is saved)."""

    def __init__(self) -> None:
        self.text_of: dict[int, tuple[Any, Any]] = {}  # id → (Text, window extent); the last draw counts
        self.line_of: dict[int, tuple[Any, Any]] = {}  # id → (artist, path in display coordinates)
        self.renderer: Any = None

    @property
    def texts(self) -> list[tuple[Any, Any]]:
        return list(self.text_of.values())

    @property
    def lines(self) -> list[tuple[Any, Any]]:
        return list(self.line_of.values())

    def clear(self) -> None:
        self.text_of.clear()
        self.line_of.clear()


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> Drawn:
    from matplotlib.lines import Line2D
    from matplotlib.spines import Spine
    from matplotlib.text import Text

    record = Drawn()
    text_draw, line_draw, spine_draw = Text.draw, Line2D.draw, Spine.draw

    def draw_text(self, renderer):  # type: ignore[no-untyped-def]
        text_draw(self, renderer)
        if self.get_visible() and self.get_text().strip():
            record.renderer = renderer
            record.text_of[id(self)] = (self, self.get_window_extent(renderer))

    def draw_line(self, renderer):  # type: ignore[no-untyped-def]
        line_draw(self, renderer)
        if self.get_visible() and self.get_linestyle() not in ("None", "", " ", "none") and self.axes is not None:
            if self.axes.get_legend() is not None and self in self.axes.get_legend().get_lines():
                return
            record.line_of[id(self)] = (self, self.get_transform().transform_path(self.get_path()))

    def draw_spine(self, renderer):  # type: ignore[no-untyped-def]
        spine_draw(self, renderer)
        if self.get_visible():
            record.line_of[id(self)] = (self, self.get_transform().transform_path(self.get_path()))

    monkeypatch.setattr(Text, "draw", draw_text)
    monkeypatch.setattr(Line2D, "draw", draw_line)
    monkeypatch.setattr(Spine, "draw", draw_spine)
    return record


def _name(text: Any) -> str:
    return repr(text.get_text()[:60])


def _outline(text: Any, box: Any, renderer: Any) -> np.ndarray:
    """The corners of ``text``'s ink box in pixels: its window extent, or for rotated text the rotated
    rectangle inscribed in it (an axis-aligned box of slanted tick labels overlaps its neighbours')."""
    angle = np.deg2rad(text.get_rotation() % 180)
    c, s = abs(np.cos(angle)), abs(np.sin(angle))
    if s < 1e-6 or c < 1e-6 or abs(c - s) < 1e-6:  # level, upright, or 45° (the inscribed box is not unique)
        if abs(c - s) < 1e-6:  # 45°: the text's own size, unrotated
            rotation = text.get_rotation()
            text.set_rotation(0)
            plain = text.get_window_extent(renderer)
            text.set_rotation(rotation)
            w, h = plain.width, plain.height
        else:
            return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
    else:  # box.width = w c + h s, box.height = w s + h c
        w, h = np.linalg.solve([[c, s], [s, c]], [box.width, box.height])
    theta = np.deg2rad(text.get_rotation())
    rotate = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    corners = np.array([[0, 0], [w, 0], [w, h], [0, h]]) @ rotate.T
    return corners - corners.min(axis=0) + [box.x0, box.y0]


def _overlap(a: np.ndarray, b: np.ndarray, slack: float = 0.5) -> bool:
    """Whether two convex quadrilaterals overlap by more than ``slack`` pixels (separating axes)."""
    for shape in (a, b):
        for i in range(4):
            edge = shape[(i + 1) % 4] - shape[i]
            axis = np.array([-edge[1], edge[0]]) / (np.hypot(*edge) or 1.0)
            pa, pb = a @ axis, b @ axis
            if pa.max() <= pb.min() + slack or pb.max() <= pa.min() + slack:
                return False
    return True


def check_drawn(record: Drawn, width: float, height: float) -> list[str]:
    """Every problem of one drawn figure: text outside the canvas, on a text, on a line."""
    problems = []
    for text, box in record.texts:
        if box.x0 < -0.5 or box.y0 < -0.5 or box.x1 > width + 0.5 or box.y1 > height + 0.5:
            problems.append(f"{_name(text)} leaves the canvas ({box.x0:.0f}..{box.x1:.0f} × {box.y0:.0f}..{box.y1:.0f} "
                            f"of {width:.0f} × {height:.0f} px)")
    shapes = [(text, _outline(text, box, record.renderer)) for text, box in record.texts]
    for (first, a), (second, b) in combinations(shapes, 2):
        if _overlap(a, b):
            problems.append(f"{_name(first)} overlaps {_name(second)}")
    from matplotlib.transforms import Bbox

    for text, box in record.texts:
        inner = Bbox.from_extents(box.x0 + 0.5, box.y0 + 0.5, box.x1 - 0.5, box.y1 - 0.5)
        for line, path in record.lines:
            if path.intersects_bbox(inner, filled=False):
                problems.append(f"{_name(text)} lies on a line ({type(line).__name__})")
                break
    return problems


@pytest.mark.parametrize("case", [(name, k) for name, builders in CASES.items() for k in range(len(builders))],
                         ids=lambda case: f"{case[0]}-{case[1]}")
def test_every_report_figure_keeps_its_text_inside_apart_and_off_the_lines(case, drawn, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from matplotlib.figure import Figure

    name, k = case
    function = figure_functions()[name]
    saved: list[tuple[float, float, list[str]]] = []
    savefig = Figure.savefig

    def measured_savefig(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        drawn.clear()
        assert "bbox_inches" not in kwargs, "the figure itself must hold its text (no cropping at save)"
        result = savefig(self, *args, **kwargs)
        width, height = self.get_size_inches() * self.dpi
        saved.append((width, height, check_drawn(drawn, width, height)))
        return result

    monkeypatch.setattr(Figure, "savefig", measured_savefig)
    png = function(*CASES[name][k]())
    assert png.startswith(b"\x89PNG")
    assert len(saved) == 1
    width, height, problems = saved[0]
    assert not problems, "\n".join(problems)


def test_the_forest_plot_names_pairs_and_coefficient_as_a_reader_knows_them(drawn) -> None:  # type: ignore[no-untyped-def]
    from workbench.studies.figures import alt_test_bars, baseline_forest

    baseline_forest(_baseline("contribution"), "contribution")
    shown = [text.get_text() for text, _ in drawn.texts]
    assert f"{JUDGES[2]} vs mean of the judges" in shown
    assert f"annotator-00a7 vs {JUDGES[0]} (re-run 1)" in shown
    assert "annotator-00b3 vs consensus of the other experts" in shown
    assert "weighted κ (quadratic) (95 % cluster-bootstrap CI)" in shown
    assert not [t for t in shown if "judge:" in t or "judge_mean" in t or "kappa" in t], shown
    drawn.clear()
    alt_test_bars(_alt_rows())
    shown = [text.get_text() for text, _ in drawn.texts]
    assert "effect · mean of the judges" in shown and f"effect · {JUDGES[1]}" in shown


def test_the_agreement_bundles_per_category_figure_keeps_its_text_inside_apart_and_off_the_lines(
        drawn, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The bundle's per-category figure: long category names beside their ids, 'not reported' rows."""
    from matplotlib.figure import Figure

    from workbench.agreement.report import _per_category_figure

    names = {f"/m/0cat{k}": name for k, name in enumerate(
        ["Outside, urban or manmade", "Inside, small room", "Mechanical fan", "Vehicle horn, car horn, honking",
         "Church bell", "Bird vocalization, bird call, bird song"])}
    rows = []
    for label, coefficient in (("effect", "krippendorff_alpha_nominal"), ("contribution", "krippendorff_alpha_ordinal")):
        for k, category in enumerate(names):
            reported = k % 2 == 0
            value = 0.1 * k - 0.2 if reported else float("nan")
            rows.append({"label": label, "subset_kind": "category", "subset": category, "coefficient": coefficient,
                         "value": value, "ci_low": value - 0.3, "ci_high": value + 0.2, "n_units": 3 + 4 * k,
                         "reason": None if reported else "needs at least 5 units; 3 available"})
    saved: list[list[str]] = []
    savefig = Figure.savefig

    def measured_savefig(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        drawn.clear()
        result = savefig(self, *args, **kwargs)
        width, height = self.get_size_inches() * self.dpi
        saved.append(check_drawn(drawn, width, height))
        shown = [text.get_text() for text, _ in drawn.texts]
        assert "Vehicle horn, car horn, honking (/m/0cat3) (n = 15)\nnot reported: needs at least 5 units; 3 available" in shown, shown
        assert "Outside, urban or manmade (/m/0cat0) (n = 3)" in shown, shown
        return result

    monkeypatch.setattr(Figure, "savefig", measured_savefig)
    (tmp_path / "figures").mkdir()
    written = _per_category_figure(tmp_path, pd.DataFrame(rows), names)
    assert len(written) == len(saved) == 2
    assert not [p for problems in saved for p in problems], saved
