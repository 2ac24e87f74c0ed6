"""Package data: prompt templates, default configuration, demo recipe, colour maps."""

from pathlib import Path

RESOURCES_DIR = Path(__file__).resolve().parent


def resource_path(*parts: str) -> Path:
    """Path of a file shipped in the ``resources`` package."""
    return RESOURCES_DIR.joinpath(*parts)
