"""The prompts an ALM is asked with: AGL1K's own (``agl1k-v1``, verbatim) and user templates.

A template is plain text with exactly one ``{audio}`` slot on its own line: the text before it
is sent first, then the recording, then the text after it (if any). That is AGL1K's message
shape (prompt text, then ``input_audio``). Nothing else in a template is interpreted: AGL1K's
prompt itself contains JSON braces, so ``str.format`` would break it.

Built-in templates live in ``resources/prompts/alm/<version>.txt``; a user template is a file
given by path (``--prompt my-prompt.txt``) or placed in ``<config dir>/prompts/alm/``. A user
template's version carries a hash of its text, so editing the file changes the fingerprint
and old answers are not reused for a different question.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from workbench.errors import InputError

AUDIO_SLOT = "{audio}"
BUILTIN_ALIASES = {"agl1k": "agl1k-v1"}
_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class AlmPrompt:
    """A loaded template: its version (enters the fingerprint) and the text around the audio."""

    version: str
    before: str
    after: str
    source: str

    @property
    def text(self) -> str:
        """The prompt text as one string (before and after the audio), e.g. the ``question`` field."""
        return self.before if not self.after else f"{self.before}\n{self.after}"


def split_template(text: str, source: str) -> tuple[str, str]:
    """The text before and after the one ``{audio}`` slot.

    Raises
    ------
    InputError
        No slot, more than one slot, or no text at all.
    """
    count = text.count(AUDIO_SLOT)
    if count != 1:
        problem = "has no {audio} slot" if count == 0 else f"has {count} {{audio}} slots"
        raise InputError(
            f"{source}: the prompt template {problem}; put exactly one line `{AUDIO_SLOT}` where the "
            "recording goes (AGL1K's prompt has it after the text)"
        )
    before, after = text.split(AUDIO_SLOT)
    # The slot sits on its own line: the newline before it and after it belong to the slot.
    before = before.removesuffix("\n")
    after = after.removeprefix("\n").removesuffix("\n")
    if not before.strip() and not after.strip():
        raise InputError(f"{source}: the prompt template has no text besides the {AUDIO_SLOT} slot")
    return before, after


def _user_dir() -> Path:
    from workbench.config import config_dir

    return config_dir() / "prompts" / "alm"


def load_prompt(name: str = "agl1k") -> AlmPrompt:
    """The template ``name``: a built-in version, a file in the user's prompt folder, or a path.

    Parameters
    ----------
    name
        ``agl1k`` / ``agl1k-v1`` (AGL1K's prompt), the stem of a file in
        ``<config dir>/prompts/alm/``, or a path to a UTF-8 text file.

    Raises
    ------
    InputError
        Unknown name, unreadable file, or a template without exactly one ``{audio}`` slot.
    """
    version = BUILTIN_ALIASES.get(name, name)
    if _NAME.match(version):
        builtin = resources.files("resources").joinpath("prompts", "alm", f"{version}.txt")
        if builtin.is_file():
            before, after = split_template(builtin.read_text(encoding="utf-8"), f"built-in prompt {version}")
            return AlmPrompt(version=version, before=before, after=after, source=f"built-in {version}")
        user_file = _user_dir() / f"{version}.txt"
        path = user_file if user_file.is_file() else None
    else:
        path = None
    if path is None:
        candidate = Path(name).expanduser()
        if not candidate.is_file():
            raise InputError(
                f"no prompt template {name!r}: use 'agl1k' (AGL1K's prompt), a file name in {_user_dir()}, "
                "or the path of a text file with one {audio} line"
            )
        path = candidate
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the prompt template ({exc}); it must be UTF-8 text") from exc
    before, after = split_template(text, str(path))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return AlmPrompt(version=f"{path.stem}@{digest}", before=before, after=after, source=str(path))
