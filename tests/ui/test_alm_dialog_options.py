"""The cockpit's ALM dialog offers what `aglw alm run` offers: --max-cost, --samples, --mode batch (issue 30)."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import select

from storage.models import Clip
from tests.storage.alm_project import make_project, write_alm_config
from ui.cockpit.alm_job import AlmRunDialog, alm_job


def test_the_dialog_builds_the_cli_options_and_a_new_setting_needs_a_new_estimate(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_alm_config(timeout=2.0)
    project = make_project(tmp_path, n=3)
    with project.store.session() as s:
        ids = [c.id for c in s.exec(select(Clip).order_by(Clip.id))]
    dialog = AlmRunDialog(project.store, ids)
    qtbot.addWidget(dialog)
    dialog.provider.setCurrentText("openai-compatible")
    dialog.model.setText("gui-omni")
    assert dialog.options().max_cost is None and dialog.options().samples == 1 and dialog.run_mode() == "sync"
    assert dialog.estimate() and dialog.run_button.isEnabled()
    assert "× 1 sample(s)" in dialog.estimate_text.text()
    for change in (lambda: dialog.max_cost.setValue(12.5), lambda: dialog.samples.setValue(3),
                   lambda: dialog.mode.setCurrentIndex(dialog.mode.findData("batch"))):
        change()
        assert not dialog.run_button.isEnabled()  # each changed setting needs a new estimate
        assert dialog.estimate()
    options = dialog.options()
    assert (options.max_cost, options.samples, dialog.run_mode()) == (12.5, 3, "batch")
    assert f"{3 * len(ids)} request(s) for {len(ids)} clip(s) × 3 sample(s)" in dialog.estimate_text.text()
    # batch mode submits a batch (Gemini only, as the CLI says), not a synchronous run
    assert alm_job(project.store, options, "batch").name.startswith("submit a batch")
    assert alm_job(project.store, options).name.startswith("ask ")
