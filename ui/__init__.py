"""Qt user interface (PySide6 + pyqtgraph): views, item models, commands wiring, workers bridge."""
