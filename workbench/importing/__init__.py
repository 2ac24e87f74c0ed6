"""Importing datasets (AGL1K CSV, mapped tables, folders, Hugging Face exports) and ALM result
files into a project store."""

from workbench.importing.datasets import import_dataset
from workbench.importing.report import ImportReport
from workbench.importing.service import import_predictions

__all__ = ["ImportReport", "import_dataset", "import_predictions"]
