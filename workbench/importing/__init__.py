"""Importing datasets (AGL1K CSV) and ALM result files into a project store."""

from workbench.importing.service import ImportReport, import_dataset, import_predictions

__all__ = ["ImportReport", "import_dataset", "import_predictions"]
