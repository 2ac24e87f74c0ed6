"""Country aliases: a dataset's labelling conventions, accepted once by a curator.

A dataset may file places under another country than the one their coordinates fall in (AGL1K
files Taiwan under China). The alias table (TOML, documented in
``resources/country_aliases.toml``) names each convention: a clip stated in ``stated`` whose
coordinates fall in ``covers`` follows the dataset's convention. ``aglw check locations``
reports such clips as matches under the alias, with their count; the country metrics
(``aglw metrics``, ``aglw leaderboard``) are handed an :class:`AliasTable` and ask the same
lookup through it (they sit below this module in the layers). Nothing applies unless the user's
configuration folder holds ``country_aliases.toml`` or a file is passed explicitly.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from workbench.config import config_dir
from workbench.errors import InputError

ALIASES_FILE = "country_aliases.toml"


@dataclass(frozen=True)
class CountryAlias:
    """``stated`` (ISO alpha-2) covers ``covers`` in this dataset's labels, for ``note``'s reason."""

    stated: str
    covers: str
    note: str = ""

    def describe(self) -> str:
        return f"{self.stated} covers {self.covers}" + (f" ({self.note})" if self.note else "")


def template_path() -> Path:
    """The documented template shipped with the program (applies only when passed explicitly)."""
    return Path(__file__).resolve().parents[1] / "resources" / ALIASES_FILE


def load_country_aliases(path: str | Path | None = None) -> tuple[tuple[CountryAlias, ...], Path | None]:
    """The alias table of ``path``, else of the configuration folder's ``country_aliases.toml``.

    Returns the aliases and the file they came from (no file: no aliases, None).

    Raises
    ------
    InputError
        A file that is not TOML, or an alias without two ISO alpha-2 codes (one line naming it).
    """
    source = Path(path) if path is not None else config_dir() / ALIASES_FILE
    if not source.is_file():
        if path is not None:
            raise InputError(f"{source}: no such alias table; see {template_path()} for its shape")
        return (), None
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{source}: not a TOML alias table ({exc})") from None
    aliases = []
    for number, entry in enumerate(data.get("alias", []), start=1):
        stated = str(entry.get("stated", "")).strip().upper() if isinstance(entry, dict) else ""
        covers = str(entry.get("covers", "")).strip().upper() if isinstance(entry, dict) else ""
        if len(stated) != 2 or len(covers) != 2 or not (stated + covers).isalpha():
            raise InputError(f"{source}: alias {number}: 'stated' and 'covers' must be ISO 3166-1 alpha-2 codes "
                             f"such as \"CN\" and \"TW\"")
        aliases.append(CountryAlias(stated, covers, str(entry.get("note", "")).strip()))
    return tuple(aliases), source


def alias_for(stated_iso: str | None, other_iso: str | None,
              aliases: tuple[CountryAlias, ...]) -> CountryAlias | None:
    """The alias under which a clip stated in ``stated_iso`` may lie in ``other_iso`` (None: none).

    The one lookup of the table: ``check locations`` passes the geocoded country of the clip's
    coordinates; the country metrics pass the country found for the clip's true coordinates."""
    if not stated_iso or not other_iso or stated_iso == other_iso:
        return None
    return next((a for a in aliases if a.stated == stated_iso.upper() and a.covers == other_iso.upper()), None)


@dataclass(frozen=True)
class AliasTable:
    """A loaded alias table and the file it came from, as the country metrics are handed it.

    The metrics (:mod:`workbench.metrics`) may not import this module (it reads the
    configuration folder, a layer above them); they ask :meth:`alias_for`, which is
    :func:`alias_for` of this table, so both readers follow one rule."""

    aliases: tuple[CountryAlias, ...] = ()
    source: Path | None = None

    def alias_for(self, stated_iso: str | None, other_iso: str | None) -> CountryAlias | None:
        return alias_for(stated_iso, other_iso, self.aliases)


def alias_table(path: str | Path | None = None) -> AliasTable:
    """:func:`load_country_aliases` as an :class:`AliasTable` (no file: an empty table)."""
    return AliasTable(*load_country_aliases(path))
