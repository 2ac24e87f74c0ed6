"""The speech rule, once (curation-model.md section 7): a clip is a *speech clip* when its AGL1K
``human_sounds`` value is at least 0.1 or the Speech tag (/m/09x0r) of the project's current
tagger run is at least τ (0.15 unless a fit chose another). Pure: no store, no Qt.

The review browser, the agreement breakdown and the selection's speech quota use it; the
leaderboard's ``--by speech`` is AGL1K's published split, by ``human_sounds`` alone, with the
same threshold.
"""

from __future__ import annotations

SPEECH_CLASS_ID = "/m/09x0r"
SPEECH_TAG_THRESHOLD = 0.15  # τ, the curation model's default tag threshold
HUMAN_SOUNDS_THRESHOLD = 0.1  # AGL1K's speech split on its human_sounds column


def is_speech_clip(
    human_sounds: float | None, speech_probability: float | None, *, tag_threshold: float = SPEECH_TAG_THRESHOLD
) -> bool | None:
    """True / False by the rule above; None when neither source is known."""
    if human_sounds is None and speech_probability is None:
        return None
    return bool(
        (speech_probability is not None and speech_probability >= tag_threshold)
        or (human_sounds is not None and human_sounds >= HUMAN_SOUNDS_THRESHOLD)
    )
