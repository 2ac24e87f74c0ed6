"""The boundaries of one review session (issue [O]), read from the source with :mod:`ast`.

Every ``install_*`` function in ``ui/`` takes the :class:`ui.session.ReviewSession` and narrow,
typed pieces (a :class:`ui.docking.DockHost`, the dock or menu it attaches to), never the window
(``Any``, ``MainWindow``, ``QMainWindow``); the cockpit never imports the review window; no ui
code finds a dock or a menu by its text or object name; no mixin types the attributes it shares
with its host as ``Any``. Each rule is checked on a bad example
first, so the guard can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

UI = Path(__file__).resolve().parents[2] / "ui"
WINDOW_TYPES = {"Any", "MainWindow", "QMainWindow"}
WINDOW_MODULES = ("ui.main_window", "ui.window_")  # the window and its mixins
COMPOSED_TYPES = {"QDockWidget", "QMenu", "QMenuBar", "QAction", "QToolBar"}
NAME_GETTERS = {"title", "objectName", "windowTitle"}


def _names(node: ast.AST | None) -> set[str]:
    """The names an annotation mentions (``a.b.MainWindow`` → ``MainWindow``), string ones included."""
    if node is None:
        return set()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _names(ast.parse(node.value, mode="eval"))
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub is not node:
            found |= _names(sub)
    return found


def window_parameters(tree: ast.AST) -> list[str]:
    """``install_x(param: T)`` where T names the window or ``Any``."""
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("install_"):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None and (hit := _names(arg.annotation) & WINDOW_TYPES):
                    bad.append(f"{node.name}({arg.arg}: {sorted(hit)})")
                if arg is not None and arg.annotation is None and arg.arg not in ("self", "cls"):
                    bad.append(f"{node.name}({arg.arg}) without a type")
    return bad


def window_imports(tree: ast.AST) -> list[str]:
    """Imports of the review window or its mixins (under ``TYPE_CHECKING`` too)."""
    bad = []
    for node in ast.walk(tree):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        bad += [m for m in modules if m.startswith(WINDOW_MODULES)]
    return bad


def _call_of(node: ast.AST, names: set[str]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names


def lookups_by_name(tree: ast.AST) -> list[str]:
    """Docks, menus and actions found rather than handed over: ``findChild(QDockWidget, …)``,
    a comparison with a ``title()`` or ``objectName()``, the menu bar's actions walked, or a
    walk over ``actions()`` that compares an item's ``text()``."""
    bad = []
    for node in ast.walk(tree):
        if _call_of(node, {"findChild", "findChildren"}) and node.args:  # type: ignore[attr-defined]
            if _names(node.args[0]) & COMPOSED_TYPES:  # type: ignore[attr-defined]
                bad.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Compare):
            if any(_call_of(side, NAME_GETTERS) for side in [node.left, *node.comparators]):
                bad.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif _call_of(node, {"actions"}) and _call_of(node.func.value, {"menuBar"}):  # type: ignore[attr-defined]
            bad.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.For) and _call_of(node.iter, {"actions"}):
            bad += _text_compares(node.body)
        elif isinstance(node, ast.comprehension) and _call_of(node.iter, {"actions"}):
            bad += _text_compares(node.ifs)
    return bad


def _text_compares(body: list[ast.stmt] | list[ast.expr]) -> list[str]:
    return [f"line {sub.lineno}: {ast.unparse(sub)}" for part in body for sub in ast.walk(part)
            if isinstance(sub, ast.Compare) and any(_call_of(side, {"text"}) for side in [sub.left, *sub.comparators])]


def mixin_any_attributes(tree: ast.AST) -> list[str]:
    """Attributes a ``...Mixin`` class (one that shares its host's attributes) types as ``Any``."""
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name.endswith("Mixin"):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and "Any" in _names(stmt.annotation):
                    bad.append(f"{node.name}.{ast.unparse(stmt.target)}: {ast.unparse(stmt.annotation)}")
    return bad


BAD = '''
from typing import Any, TYPE_CHECKING
if TYPE_CHECKING:
    from ui.main_window import MainWindow

def install_a(session: ReviewSession, window: Any) -> None: ...
def install_b(window: "MainWindow") -> None: ...
def install_c(window: QMainWindow | None, other) -> None: ...

def compose(window):
    dock = window.findChild(QDockWidget, "dock-Evidence")
    menus = window.findChildren(QtWidgets.QMenu)
    menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Review")
    for act in menu.actions():
        if act.text() == "Undo":
            pass
    if menu.title() == "&Project" or dock.objectName() == "dock-Jobs":
        pass

class TransportMixin:
    player: Player
    timer: Any
    playheads: list["Any"]
    def method(self) -> Any: ...
'''


def test_the_guard_finds_each_kind_of_breach() -> None:
    tree = ast.parse(BAD)
    assert window_parameters(tree) == ["install_a(window: ['Any'])", "install_b(window: ['MainWindow'])",
                                       "install_c(window: ['QMainWindow'])", "install_c(other) without a type"]
    assert window_imports(tree) == ["ui.main_window", "ui.main_window.MainWindow"]
    found = lookups_by_name(tree)
    # findChild, findChildren, the menu bar's actions and a text compared while walking them,
    # a text compared while walking a menu's actions, a title and an object name compared
    assert sorted(int(f.split(":")[0].removeprefix("line ")) for f in found) == [11, 12, 13, 13, 15, 17, 17], found
    assert any("findChild(QDockWidget" in f for f in found) and any("menuBar().actions()" in f for f in found)
    assert any("title()" in f for f in found) and any("act.text() == 'Undo'" in f for f in found)
    # only the shared attributes count (a method may return Any)
    assert mixin_any_attributes(tree) == ["TransportMixin.timer: Any", "TransportMixin.playheads: list['Any']"]


def _ui_sources() -> list[Path]:
    return sorted(UI.rglob("*.py"))


def _parse(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@pytest.mark.parametrize("check", [window_parameters, lookups_by_name, mixin_any_attributes], ids=lambda f: f.__name__)
def test_ui_code_keeps_the_session_boundaries(check) -> None:  # type: ignore[no-untyped-def]
    sources = _ui_sources()
    assert any(p.name == "__init__.py" and p.parent.name == "cockpit" for p in sources)
    breaches = {str(p.relative_to(UI.parent)): found for p in sources if (found := check(_parse(p)))}
    assert not breaches


def test_the_install_functions_exist_where_the_guard_looks() -> None:
    """The guard is not vacuous: it sees the cockpit's, the events', guess mode's and error modes' installers."""
    names = {node.name for p in _ui_sources() for node in ast.walk(_parse(p))
             if isinstance(node, ast.FunctionDef) and node.name.startswith("install_")}
    assert {"install_cockpit", "install_events_panel", "install_guess_mode", "install_error_modes"} <= names


def test_the_cockpit_never_imports_the_review_window() -> None:
    breaches = {str(p.relative_to(UI.parent)): found for p in sorted((UI / "cockpit").rglob("*.py"))
                if (found := window_imports(_parse(p)))}
    assert not breaches


def test_the_cockpit_installs_on_a_bare_window_and_asks_the_session_for_clips(demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    """No review window at all: a link in a cockpit view becomes the session's request, F5 asks
    for a reload, and the docks and menus go where the host and the caller put them."""
    from PySide6.QtWidgets import QMainWindow

    from ui.cockpit import VIEW_NAMES, install_cockpit
    from ui.docking import DockHost
    from ui.session import ReviewSession
    from workbench.labels import LabelService
    from workbench.review.visibility import VisibilityPolicy

    window = QMainWindow()
    qtbot.addWidget(window)
    session = ReviewSession(demo_store, LabelService(demo_store).ensure_annotator("tester"),
                            VisibilityPolicy(blind_mode=True), window)
    project_menu = window.menuBar().addMenu("Anything")  # handed over: its text does not matter
    cockpit = install_cockpit(session, DockHost(window), anchor=None, project_menu=project_menu,
                              visible_clip_ids=lambda: [], force_sync=True)
    try:
        assert [d.objectName() for d in cockpit.docks.values()] == [f"dock-cockpit-{n}" for n in VIEW_NAMES]
        assert project_menu.actions() == [cockpit.refresh_action]
        requested: list[int] = []
        reloads: list[bool] = []
        session.openClipRequested.connect(requested.append)
        session.reloadRequested.connect(lambda: reloads.append(True))
        cockpit.curation.clipActivated.emit("DEMO-0003")
        assert requested == [session.review.clip_id_for_key("DEMO-0003")]
        cockpit.refresh_action.trigger()
        assert reloads == [True]
    finally:
        cockpit.shutdown()
