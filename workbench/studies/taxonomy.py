"""AGL1K's error-mode taxonomy: the one list of modes (codes, names, review keys, meanings) that the
labels, the judges' reply schema, the CLI's help and the views all read. Pure data, no imports, so
that the command line can name the modes without loading the store."""

from __future__ import annotations

# code → (display name, key in the review column, what it means); the order is the paper's.
TAXONOMY: dict[str, tuple[str, str, str]] = {
    "language_ambiguity": ("Language Ambiguity", "L",
                           "a language heard in several countries led to the wrong one"),
    "over_commitment": ("Over-Commitment", "C", "the reasoning supports several places but one is asserted"),
    "over_reasoning": ("Over-Reasoning", "R", "the right answer is reached, then overridden"),
    "bird_bias": ("Bird Bias", "B", "bird song over-weighted as a regional cue"),
    "label_misidentification": ("Label Misidentification", "M", "a sound named as something it is not"),
    "educated_guess": ("Educated Guess", "G", "the model says the information is insufficient and guesses"),
    "refusal": ("Refusal", "F", "no location given"),
    "other": ("Other", "O", "none of the above (a note says what)"),
}
MODES = tuple(TAXONOMY)
# An answer closer than this to the truth is right (AGL1K's γ): the modes of a wrong answer do not
# apply to it (``--force`` overrides); the same radius decides which answers are listed as wrong.
RIGHT_RADIUS_KM = 1000.0
