"""Which module defines each top-level `aglw` command, and the one line `aglw --help` shows for it.

`aglw` imports a command's module only when that command runs (``aglw clips list`` never loads the
judges, the ALM runner or the GUI), so `aglw --help` lists the commands from this table instead of
importing every module: start-up stays in a blink as areas grow (issue 15, bench P11).
``tests/core/test_cli_registry.py`` checks the table against what the modules register, so it
cannot drift: a new command is added here and in its module's ``register``.

Rows are in the order `aglw --help` lists them (typer's order: plain commands, then groups).
"""

from __future__ import annotations

# (command name, module under cli/, the help listing's line)
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("metrics", "board_cmds", "Leaderboard metrics for one model."),
    ("leaderboard", "board_cmds", "Table for all imported models, the human localizers and the web studies' crowds."),
    ("compare", "board_cmds", "Paired comparison of two models (or any two leaderboard rows) on the clips both answered."),
    ("analyze", "audio_cmds", "Decode one audio file: duration, rate, channels, detected layout, quality metrics."),
    ("fetch-audio", "audio_cmds",
     "Download a dataset's recordings from their public source (resumable; rerun to resume)."),
    ("direction", "audio_cmds", "Direction analysis of one file: per-frame directions and the dominant directions."),
    ("analyze-pool", "pool_cmds",
     "Decode and measure a pool (level, flatness, clipping, ACI) and flag it with the four quality filters."),
    ("tag", "tagging_cmds", "Tag the project's clips with EfficientAT (resumable: finished clips are skipped)."),
    ("tag-file", "tagging_cmds", "Tag one audio file without a project."),
    ("fit", "curation_cmds",
     "Fit the curation model (a stored run unless --preview) and show the diff to the last run."),
    ("select", "curation_cmds",
     "Select M clips from a curation run, stratified by speech and continent; stores the selection."),
    ("agreement", "agreement_cmds",
     "Agreement study: the project bundle (--out) or any ratings CSV (--ratings)."),
    ("gui", "gui_cmds", "Open the desktop review workbench."),
    ("screenshot", "gui_cmds", "Render the main window with a clip open, off-screen, to a PNG."),
    ("demo", "gui_cmds", "Generate a demo project offline (synthetic DEMO data) and open the GUI on it."),
    ("import", "data_cmds",
     "Import a dataset (AGL1K CSV, a mapped table, a folder of recordings, an hf export) or ALM result records (all or nothing)."),
    ("serve", "web_cmds", "Serve a web study's page (the study page: consent, headphone check, clips) until Ctrl-C."),
    ("clips", "clips_cmds", "List and show the clips of the project."),
    ("media", "clips_cmds", "Find the recordings of clips under the media roots."),
    ("judgments", "clips_cmds", "Show what the LLM judges said."),
    ("label", "label_cmds", "Record expert labels (each edit is committed before it is acknowledged)."),
    ("judge", "judge_cmds", "Run the LLM judges on the ALM chain-of-thought (see `aglw judge --help`)."),
    ("export", "curation_cmds", "Export project data."),
    ("check", "curation_cmds", "Consistency checks of the project's data."),
    ("alm", "alm_cmds", "Run audio-language models on the clips (see `aglw alm run --help`)."),
    ("study", "study_cmds", "Studies: may the LLM judge replace a person? error modes, sensitivity, the report."),
    ("events", "events_cmds", "Spatial sound events: STARSS23/DCASE files, SELD metrics, spatial QA."),
    ("quality", "quality_cmds",
     "Overrule or restore a clip's quality flag (per annotator, versioned, in the label history)."),
)

MODULE_OF: dict[str, str] = {name: module for name, module, _ in COMMANDS}
HELP_OF: dict[str, str] = {name: line for name, _, line in COMMANDS}
MODULES: tuple[str, ...] = tuple(dict.fromkeys(module for _, module, _ in COMMANDS))
