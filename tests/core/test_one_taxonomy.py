"""The error-mode taxonomy is listed once (workbench/studies/taxonomy.py): the judges' reply schema and
the CLI's help are made from it, and no other module spells the modes out."""

from __future__ import annotations

from pathlib import Path

from workbench.studies.taxonomy import MODES, TAXONOMY


def test_the_judges_schema_and_the_cli_help_are_the_taxonomy() -> None:
    from workbench.studies.error_judges import ErrorModeReply

    assert MODES == tuple(TAXONOMY)
    schema = ErrorModeReply.model_json_schema()
    assert tuple(schema["properties"]["modes"]["items"]["enum"]) == MODES


def test_no_module_but_the_taxonomy_spells_the_modes_out() -> None:
    root = Path(__file__).resolve().parents[2]
    offenders = []
    for folder in ("workbench", "ui", "cli"):
        for path in sorted((root / folder).rglob("*.py")):
            if path.name == "taxonomy.py" and path.parent.name == "studies":
                continue
            text = path.read_text(encoding="utf-8")
            if sum(f'"{code}"' in text for code in MODES if code not in ("refusal", "other")) >= 2:
                offenders.append(path.relative_to(root).as_posix())
    assert not offenders, offenders
