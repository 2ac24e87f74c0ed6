"""Typed, versioned user configuration (TOML in the platform config dir) and cache paths."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

APP_NAME = "aglw"
CONFIG_VERSION = 1


def config_dir() -> Path:
    """Directory of user configuration (``AGLW_CONFIG_DIR`` overrides, for tests)."""
    env = os.environ.get("AGLW_CONFIG_DIR")
    return Path(env) if env else Path(platformdirs.user_config_dir(APP_NAME))


def cache_dir() -> Path:
    """Directory of downloaded models, ontology and audio caches (``AGLW_CACHE_DIR`` overrides)."""
    env = os.environ.get("AGLW_CACHE_DIR")
    return Path(env) if env else Path(platformdirs.user_cache_dir(APP_NAME))


@dataclass
class Settings:
    """User settings from ``config.toml``; unknown keys are kept and passed on."""

    version: int = CONFIG_VERSION
    annotator: str | None = None
    default_db: str | None = None
    efficientat_dir: str | None = None
    ontology_path: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | None = None) -> "Settings":
        """The settings of ``config.toml`` (defaults when there is none).

        Raises
        ------
        InputError
            Not TOML, or a known key with a value of the wrong type (named with the key).
        """
        path = path or config_dir() / "config.toml"
        if not path.exists():
            return cls()
        from workbench.config_schema import read_toml, validate

        data = read_toml(path, "fix or delete the file")
        parsed = validate(_settings_model(), data, path)
        known = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        return cls(**known, extra=dict(parsed.model_extra or {}))


@functools.lru_cache(maxsize=1)
def _settings_model():  # type: ignore[no-untyped-def]
    """The pydantic model of ``config.toml`` (built on first use: pydantic is not a start-up import)."""
    from pydantic import BaseModel, ConfigDict, Field

    class SettingsFile(BaseModel):
        # Unknown keys are kept and passed on (other parts of the workbench read them).
        model_config = ConfigDict(extra="allow", str_strip_whitespace=True)

        version: int = Field(CONFIG_VERSION, ge=1)
        annotator: str | None = Field(None, min_length=1)
        default_db: str | None = None
        efficientat_dir: str | None = None
        ontology_path: str | None = None

    return SettingsFile


def default_db_location() -> str:
    """``AGLW_DB`` if set, else ``./aglw.sqlite`` (cli.md)."""
    return os.environ.get("AGLW_DB") or "aglw.sqlite"
