"""Versioned prompt templates (``resources/prompts/<version>/``) and their rendering for one clip.

The system part is the same for every clip (so it can be prompt-cached); the per-clip part carries the
detected categories, the prediction, the truth and the chain-of-thought inside clear delimiters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from string import Template
from typing import Any

from workbench.errors import InputError

COT_BEGIN = "<<<COT_BEGIN>>>"
COT_END = "<<<COT_END>>>"
_VERSION_PATTERN = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class CategoryInput:
    """One detected category as the judge sees it."""

    audioset_id: str
    name: str
    root: str
    probability: float


@dataclass(frozen=True)
class ClipInput:
    """Everything a judge reads about one clip (plain data, no ORM objects)."""

    clip_id: int
    clip_key: str
    categories: tuple[CategoryInput, ...]
    cot: str
    predicted_city: str | None = None
    predicted_country: str | None = None
    predicted_latitude: str | None = None
    predicted_longitude: str | None = None
    true_city: str | None = None
    true_country: str | None = None
    true_latitude: float | None = None
    true_longitude: float | None = None
    error_km: float | None = None

    @property
    def category_ids(self) -> list[str]:
        return [c.audioset_id for c in self.categories]


@dataclass(frozen=True)
class PromptTemplate:
    """A loaded prompt version: its system text and the per-clip template."""

    version: str
    system: str
    clip_template: str


@dataclass(frozen=True)
class RenderedPrompt:
    """The two parts of one request, ready for any provider."""

    version: str
    system: str
    user: str
    category_ids: tuple[str, ...] = field(default_factory=tuple)
    cot: str = ""


@lru_cache(maxsize=8)
def load_template(version: str) -> PromptTemplate:
    """Load ``resources/prompts/<version>/{system.md, clip.md, VERSION}``.

    Raises
    ------
    InputError
        The version folder or one of its files is missing, or VERSION disagrees with the folder name.
    """
    if not _VERSION_PATTERN.match(version):
        raise InputError(f"prompt_version {version!r}: use a folder name such as 'attribution-v1'")
    folder = resources.files("resources") / "prompts" / version
    try:
        system = (folder / "system.md").read_text(encoding="utf-8")
        clip = (folder / "clip.md").read_text(encoding="utf-8")
        declared = (folder / "VERSION").read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise InputError(
            f"prompt version {version!r}: resources/prompts/{version}/ needs system.md, clip.md and VERSION "
            f"({exc.filename or exc}); set prompt_version in judges.toml to an existing version"
        ) from exc
    if declared != version:
        raise InputError(f"resources/prompts/{version}/VERSION says {declared!r}; it must equal the folder name")
    return PromptTemplate(version=version, system=system.strip() + "\n", clip_template=clip)


def _coordinates(lat: Any, lon: Any) -> str:
    if lat in (None, "") and lon in (None, ""):
        return "not given"
    return f"{lat}, {lon}"


def _text(value: Any) -> str:
    return "not given" if value in (None, "") else str(value)


def render_clip_prompt(clip: ClipInput, template: PromptTemplate) -> RenderedPrompt:
    """Render the per-clip part of a template for one clip.

    Parameters
    ----------
    clip
        The clip's categories, prediction, truth and chain-of-thought.
    template
        A loaded prompt version.
    """
    lines = [
        f"- {c.audioset_id} | {c.name} | {c.root} | {c.probability:.3f}" for c in clip.categories
    ]
    if clip.error_km is None:
        error = "unknown (the predicted coordinates could not be parsed)"
    else:
        error = f"{clip.error_km:.0f} km"
    # The CoT must not be able to close its own delimiter block.
    cot = clip.cot.replace(COT_END, "<<<COT_END (quoted)>>>")
    user = Template(template.clip_template).substitute(
        clip_key=clip.clip_key,
        categories="\n".join(lines),
        predicted_city=_text(clip.predicted_city),
        predicted_country=_text(clip.predicted_country),
        predicted_coordinates=_coordinates(clip.predicted_latitude, clip.predicted_longitude),
        true_city=_text(clip.true_city),
        true_country=_text(clip.true_country),
        true_coordinates=_coordinates(clip.true_latitude, clip.true_longitude),
        error_km=error,
        cot=cot,
    )
    return RenderedPrompt(
        version=template.version,
        system=template.system,
        user=user,
        category_ids=tuple(clip.category_ids),
        cot=clip.cot,
    )


def request_fingerprint(provider: str, model_id: str, prompt: RenderedPrompt, schema: dict[str, Any]) -> str:
    """sha256 of (provider, model id, prompt version, rendered prompt, schema): the result-cache key
    (the engine's one fingerprint, in the style judge calls were always keyed with)."""
    from workbench.llm.fingerprint import fingerprint

    return fingerprint({"provider": provider, "model": model_id, "prompt_version": prompt.version,
                        "system": prompt.system, "user": prompt.user, "schema": schema}, style="spaced")
