"""The cockpit's Agreement view writes the study report as a job and opens its tables."""

from __future__ import annotations

from ui.cockpit.agreement_view import AgreementView
from ui.cockpit.jobs import JobsPanel
from workbench.config import cache_dir


def test_study_report_button_writes_the_report_and_opens_its_tables(qtbot, demo_store) -> None:  # type: ignore[no-untyped-def]
    jobs = JobsPanel(demo_store, force_sync=True)
    view = AgreementView(demo_store, jobs)
    qtbot.addWidget(jobs)
    qtbot.addWidget(view)
    view.bootstrap.setValue(5)
    assert view.run_study_report()
    assert jobs.last_status == "done", jobs.status.text()
    report = cache_dir() / "study-report" / "report.html"
    assert report.is_file() and "data:image/png;base64," in report.read_text(encoding="utf-8")
    titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
    assert "alt_test" in titles and "baseline" in titles and any(t.startswith("sensitivity") for t in titles)
    assert str(report) in view.message.text()
    assert view.run_study_report() and jobs.last_status == "done"  # a second run replaces the first
