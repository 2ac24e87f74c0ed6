"""Optional dependencies (pip extras): what needs them, and the one line that says how to get them.

Only teams need PostgreSQL (``[postgres]``, see :mod:`storage.db`) and only Parquet users need pyarrow (``[parquet]``);
everyone else installs neither. A feature that needs a missing extra says which one to install.
"""

from __future__ import annotations

import importlib.util

# module -> (extra, what needs it). The store names its own extra (postgres): it sits below
# this layer.
EXTRAS = {
    "pyarrow": ("parquet", "Parquet files"),
    "sofar": ("spatial", "Reading head-related responses from SOFA files"),
    "datasets": ("share", "Hugging Face dataset exports"),
    "mlcroissant": ("share", "Validating Croissant metadata"),
}


def missing_extra_message(module: str) -> str:
    """One line naming the extra that provides ``module`` and how to install it."""
    extra, feature = EXTRAS[module]
    return f"{feature} needs the '{extra}' extra: pip install 'agl-workbench[{extra}]'"


def has(module: str) -> bool:
    """Whether an optional module can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules (tests) counts as missing
        return False
