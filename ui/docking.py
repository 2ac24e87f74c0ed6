"""What a panel's ``install_*`` function may do to the window that composes it (issue [O]).

A panel receives the :class:`ui.session.ReviewSession` for the session's state and a
:class:`DockHost` for composing: add a dock, tab it beside an anchor dock it was handed (never one
found by its title or object name), add a menu, add a window-wide shortcut, and a parent for its
dialogs and timers. The host wraps any :class:`QMainWindow`, so a panel knows nothing of the
review window's own attributes, and a test can install one on a bare window.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu, QWidget


class DockHost:
    """The composing side of a main window, and nothing else of it."""

    def __init__(self, window: QMainWindow) -> None:
        self._window = window

    @property
    def parent(self) -> QWidget:
        """The parent of a panel's dialogs and timers (a plain widget: none of the window's own)."""
        return self._window

    def add_dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea, *,
                 name: str | None = None) -> QDockWidget:
        """A new dock showing ``widget`` in ``area``; ``name`` (default ``dock-<title>``) is the
        object name the remembered layout (``QMainWindow.saveState``) keys it by."""
        dock = QDockWidget(title, self._window)
        dock.setObjectName(name or f"dock-{title}")
        dock.setWidget(widget)
        self._window.addDockWidget(area, dock)
        return dock

    def tab_beside(self, anchor: QDockWidget, dock: QDockWidget) -> None:
        """Put ``dock`` in a tab beside ``anchor`` (it takes the anchor's place and size)."""
        self._window.tabifyDockWidget(anchor, dock)

    def add_menu(self, title: str) -> QMenu:
        """A new menu at the end of the menu bar; the caller keeps it (menus are never found by text)."""
        return self._window.menuBar().addMenu(title)

    def add_shortcut(self, action: QAction) -> None:
        """An action whose keys work anywhere in the window, whichever panel has the focus."""
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self._window.addAction(action)
