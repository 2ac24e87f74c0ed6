"""Typed, versioned user configuration (TOML in the platform config dir) and cache paths."""

from __future__ import annotations

import os
import tomllib
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
        path = path or config_dir() / "config.toml"
        if not path.exists():
            return cls()
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            from workbench.errors import InputError

            raise InputError(f"{path}: not valid TOML ({exc}); fix or delete the file") from exc
        version = int(data.pop("version", CONFIG_VERSION))
        known = {k: data.pop(k) for k in ("annotator", "default_db", "efficientat_dir", "ontology_path") if k in data}
        return cls(version=version, extra=data, **known)


def default_db_location() -> str:
    """``AGLW_DB`` if set, else ``./aglw.sqlite`` (cli.md)."""
    return os.environ.get("AGLW_DB") or "aglw.sqlite"
