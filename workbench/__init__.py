"""AGL Workbench domain layer: algorithms, application services and the `aglw` CLI (no Qt)."""

__version__ = "0.1.0"
