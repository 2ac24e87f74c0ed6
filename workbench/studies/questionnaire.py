"""Who answered: the researcher's questionnaire and the participant's device class (issue 45).

The questionnaire is a TOML file given when a study is created (``aglw study web NAME
--questionnaire q.toml``). It is validated here, once, with pydantic, and stored as plain JSON in
``web_study.questionnaire``; a mistake is one line naming the file, the question and the field.
The participant's answers are checked against the stored questions on the server
(:func:`check_answers`): a value the form never offered is refused, whatever the browser sent.

Question kinds: ``choice`` (one of the options), ``multi`` (any of them), ``country`` (ISO 3166,
one, or several with ``multiple = true``), ``languages`` (ISO 639, several), ``number``
(``min``/``max``) and ``text`` (``max_length``; control and bidirectional-override characters are
refused, and the text is escaped wherever it is shown). Ids are ``[a-z_]+``.

The device is the user agent reduced to three families, ``{class, browser, os}``
(:func:`device_class`): the raw string identifies a browser too well and is never stored.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from workbench.errors import InputError

KINDS = ("choice", "multi", "country", "languages", "number", "text")
MAX_QUESTIONS = 40
MAX_OPTIONS = 60
MAX_TEXT_CHARS = 2000
DEFAULT_TEXT_CHARS = 200
MAX_FILE_BYTES = 64 * 1024
# the characters that reorder or hide text (Trojan Source): a free-text answer carrying one is refused
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _models() -> tuple[Any, Any]:
    """The pydantic models of a questionnaire (built on first use: pydantic is a heavy import)."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

    class Option(BaseModel):
        model_config = ConfigDict(extra="forbid")
        value: Annotated[str, Field(pattern=r"^[a-z0-9_]{1,40}$")]
        label: Annotated[str, Field(min_length=1, max_length=200)]

    class Question(BaseModel):
        model_config = ConfigDict(extra="forbid")
        id: Annotated[str, Field(pattern=r"^[a-z_]{1,40}$")]
        kind: Literal["choice", "multi", "country", "languages", "number", "text"]
        text: Annotated[str, Field(min_length=1, max_length=500)]
        required: bool = False
        help: Annotated[str, Field(max_length=500)] = ""
        options: list[Option] = []
        multiple: bool = False  # country: several countries
        codes: list[str] = []  # languages: ISO 639-3 codes offered beside the ISO 639-1 list
        min: float | None = None
        max: float | None = None
        integer: bool = False
        max_length: Annotated[int, Field(ge=1, le=MAX_TEXT_CHARS)] = DEFAULT_TEXT_CHARS

        @field_validator("options", mode="before")
        @classmethod
        def _plain_options(cls, value: Any) -> Any:
            # an option may be written as its label alone: its value is the label, lower-cased to [a-z0-9_]
            if isinstance(value, list):
                return [{"value": re.sub(r"[^a-z0-9]+", "_", v.lower()).strip("_")[:40] or "option", "label": v}
                        if isinstance(v, str) else v for v in value]
            return value

        @model_validator(mode="after")
        def _by_kind(self) -> "Question":
            if self.kind in ("choice", "multi"):
                if len(self.options) < 2 or len(self.options) > MAX_OPTIONS:
                    raise ValueError(f"options: give 2 to {MAX_OPTIONS} options for a {self.kind} question")
                values = [o.value for o in self.options]
                if len(set(values)) != len(values):
                    raise ValueError("options: two options have the same value")
            elif self.options:
                raise ValueError(f"options: a {self.kind} question takes no options")
            if self.kind == "number":
                if self.min is None or self.max is None or not self.min < self.max:
                    raise ValueError("min/max: a number question needs min < max")
            elif self.min is not None or self.max is not None:
                raise ValueError(f"min/max: only a number question takes them, not a {self.kind} question")
            if self.multiple and self.kind != "country":
                raise ValueError("multiple: only a country question takes it")
            if self.codes:
                if self.kind != "languages":
                    raise ValueError("codes: only a languages question takes them")
                unknown = [c for c in self.codes if _language_name(c) is None]
                if unknown:
                    raise ValueError(f"codes: {', '.join(unknown)} are not ISO 639-3 codes")
            return self

    class Questionnaire(BaseModel):
        model_config = ConfigDict(extra="forbid")
        title: Annotated[str, Field(max_length=200)] = "A few questions about you"
        intro: Annotated[str, Field(max_length=2000)] = ""
        question: Annotated[list[Question], Field(min_length=1, max_length=MAX_QUESTIONS)]

        @model_validator(mode="after")
        def _unique(self) -> "Questionnaire":
            ids = [q.id for q in self.question]
            twice = sorted({i for i in ids if ids.count(i) > 1})
            if twice:
                raise ValueError(f"id: {', '.join(twice)} used twice")
            return self

    return Question, Questionnaire


def load_questionnaire(path: Path) -> dict[str, Any]:
    """The questionnaire of a TOML file, validated, as stored; a one-line :class:`InputError` otherwise."""
    from pydantic import ValidationError

    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"--questionnaire {path}: cannot read it ({exc.strerror or exc.__class__.__name__})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(f"{path}: {len(raw):,} bytes; keep a questionnaire under {MAX_FILE_BYTES:,}")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{path}: not valid TOML ({str(exc).splitlines()[0]})") from None
    _, questionnaire = _models()
    try:
        return questionnaire.model_validate(data).model_dump()
    except ValidationError as exc:
        raise InputError(_one_error(path, data, exc.errors()[0])) from None


def _one_error(path: Path, data: dict[str, Any], error: dict[str, Any]) -> str:
    """A pydantic error as ``FILE: question 'ID': field FIELD: what is wrong``."""
    loc = list(error.get("loc", ()))
    message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    where = "top level"
    if loc[:1] == ["question"] and len(loc) > 1 and isinstance(loc[1], int):
        questions = data.get("question") if isinstance(data.get("question"), list) else []
        entry = questions[loc[1]] if loc[1] < len(questions) else {}
        name = entry.get("id") if isinstance(entry, dict) else None
        where = f"question {name!r}" if isinstance(name, str) else f"question {loc[1] + 1}"
        loc = loc[2:]
    field = ".".join(str(x) for x in loc if not isinstance(x, int))
    if not field and ":" in message.split(" ")[0]:
        field, message = message.split(":", 1)
        message = message.strip()
    return f"{path}: {where}: field {field or '(the question)'}: {message}"


@cache
def countries() -> tuple[tuple[str, str], ...]:
    """ISO 3166 countries as ``(alpha-2 code, name)``, by name."""
    import pycountry

    return tuple(sorted(((c.alpha_2, getattr(c, "common_name", c.name)) for c in pycountry.countries),
                        key=lambda pair: pair[1]))


@cache
def _languages_639_1() -> tuple[tuple[str, str], ...]:
    import pycountry

    return tuple((lang.alpha_3, lang.name) for lang in pycountry.languages if hasattr(lang, "alpha_2"))


@cache
def _language_name(code: str) -> str | None:
    import pycountry

    found = pycountry.languages.get(alpha_3=code) if re.fullmatch(r"[a-z]{3}", code or "") else None
    return None if found is None else str(found.name)


def languages(question: dict[str, Any]) -> list[tuple[str, str]]:
    """The languages a question offers: ISO 639-1's (as ISO 639-3 codes) and its own ``codes``, by name."""
    offered = dict(_languages_639_1())
    for code in question.get("codes") or []:
        offered[code] = _language_name(code) or code
    return sorted(offered.items(), key=lambda pair: pair[1])


def form_questions(questionnaire: dict[str, Any]) -> list[dict[str, Any]]:
    """The stored questions with what their form controls list (countries, languages)."""
    out = []
    for q in questionnaire["question"]:
        choices: list[tuple[str, str]] = [(o["value"], o["label"]) for o in q.get("options") or []]
        if q["kind"] == "country":
            choices = list(countries())
        elif q["kind"] == "languages":
            choices = languages(q)
        out.append({**q, "choices": choices,
                    "several": q["kind"] in ("multi", "languages") or (q["kind"] == "country" and q["multiple"])})
    return out


def check_text(value: str, what: str, max_length: int) -> str:
    """A free-text answer as stored: trimmed, bounded, without control or bidi characters."""
    value = value.strip()
    if len(value) > max_length:
        raise InputError(f"{what}: {len(value)} characters; keep it under {max_length}")
    if any(unicodedata.category(ch) == "Cc" or ch in _BIDI for ch in value):
        raise InputError(f"{what} contains control or text-direction characters; type plain text")
    return value


def check_answers(questionnaire: dict[str, Any], form: dict[str, list[str]]) -> dict[str, Any]:
    """Her answers, checked against the stored questions: ``{id: value}`` (None when left empty).

    ``form`` is the posted form (each field's values). A value the question does not offer, a
    missing required answer or a field no question names is a one-sentence :class:`InputError`.
    """
    questions = form_questions(questionnaire)
    known = {q["id"] for q in questions}
    unknown = sorted(set(form) - known)
    if unknown:
        raise InputError(f"the form carries a field no question asks ({unknown[0][:40]!r})")
    answers: dict[str, Any] = {}
    for q in questions:
        values = [v for v in form.get(q["id"], []) if v.strip()]
        what = f"the answer to \"{q['text'][:60]}\""
        if not values:
            if q["required"]:
                raise InputError(f"{what} is required")
            answers[q["id"]] = [] if q["several"] else None
            continue
        if len(values) > 1 and not q["several"]:
            raise InputError(f"{what} takes one value")
        if q["kind"] == "number":
            answers[q["id"]] = _number(values[0], q, what)
        elif q["kind"] == "text":
            answers[q["id"]] = check_text(values[0], what, int(q["max_length"])) or None
        else:
            offered = {code for code, _ in q["choices"]}
            if len(values) > len(offered) or any(v not in offered for v in values):
                raise InputError(f"{what} is not one the form offers")
            answers[q["id"]] = list(dict.fromkeys(values)) if q["several"] else values[0]
    return answers


def _number(text: str, q: dict[str, Any], what: str) -> float | int:
    from workbench.strict_numbers import check_float

    try:
        value = float(text) if text.strip().isascii() else float("nan")
    except ValueError:
        raise InputError(f"{what} must be a number") from None
    value = check_float(value, "answer", what, minimum=q["min"], maximum=q["max"])
    if q.get("integer"):
        if value != int(value):
            raise InputError(f"{what} must be a whole number")
        return int(value)
    return value


def device_class(user_agent: str | None) -> dict[str, str]:
    """``{class: phone|tablet|desktop|unknown, browser, os}`` (families) of a user agent; nothing else of it.

    iPadOS's Safari announces itself as a Mac: it counts as a desktop (the user agent cannot tell).
    """
    from ua_parser import parse

    text = (user_agent or "")[:1000]
    if not text.strip():
        return {"class": "unknown", "browser": "unknown", "os": "unknown"}
    parsed = parse(text)
    browser = parsed.user_agent.family if parsed.user_agent else "Other"
    system = parsed.os.family if parsed.os else "Other"
    device = parsed.device.family if parsed.device else ""
    if "iPad" in device or "Tablet" in text or (system == "Android" and "Mobile" not in text):
        kind = "tablet"
    elif "iPhone" in device or "Mobi" in text or system in ("iOS", "Android"):
        kind = "phone"
    else:
        kind = "desktop"
    return {"class": kind, "browser": str(browser), "os": str(system)}


def check_recognised(value: Any) -> dict[str, Any]:
    """The per-clip "I recognise this place / language" item: ``{place, language, language_name}``."""
    if not isinstance(value, dict) or set(value) - {"place", "language", "language_name"}:
        raise InputError("recognised must be an object with place, language and language_name")
    out: dict[str, Any] = {}
    for key in ("place", "language"):
        flag = value.get(key, False)
        if not isinstance(flag, bool):
            raise InputError(f"recognised.{key} must be true or false")
        out[key] = flag
    name = value.get("language_name")
    if name is not None and not isinstance(name, str):
        raise InputError("the recognised language must be text")
    out["language_name"] = (check_text(name, "the recognised language", 80) or None) if name else None
    return out
