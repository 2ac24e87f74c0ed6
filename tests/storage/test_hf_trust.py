"""Trust at the edges (issue 40): `import dataset --format hf` verifies what an export states
(croissant.json present and valid, every file's SHA-256, every embedded recording decodable)
before it writes anything, one line per problem; `--no-verify` imports as it is, on purpose. And
the export's audio reads back with what `[share]` installs: `load_dataset(OUT)["test"][0]` works,
and every recording decodes (as the card says) to the project's own samples."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from sqlalchemy import func, select

from cli.main import main
from storage.models import Clip, Dataset
from tests.storage.test_hf_export import load, source, stored  # noqa: F401 - source is a fixture
from workbench.audio.loader import load_audio
from workbench.importing import import_dataset

datasets = pytest.importorskip("datasets", reason="the [share] extra (datasets) is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="the [share] extra (pyarrow) is not installed")


def _export(source: dict) -> Path:  # noqa: F811 - the fixture's value
    from workbench.curation.hf_export import export_hf

    out = source["tmp"] / "bench"
    export_hf(source["store"], out)
    return out


def _shard(out: Path) -> Path:
    return next((out / "data").glob("*.parquet"))


def _set_audio(out: Path, changes: dict[int, bytes | None], *, rehash: bool) -> None:
    """Replace the audio bytes of rows (by index) of the one shard; ``rehash``: a careful tamperer
    also writes the new file's SHA-256 into croissant.json."""
    shard = _shard(out)
    table = pq.read_table(shard)
    rows = table.to_pylist()
    for index, data in changes.items():
        rows[index]["audio"]["bytes"] = data
    pq.write_table(table.from_pylist(rows, schema=table.schema), shard)
    if rehash:
        document = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
        for item in document["distribution"]:
            if item.get("sha256"):
                item["sha256"] = hashlib.sha256((out / item["contentUrl"]).read_bytes()).hexdigest()
        (out / "croissant.json").write_text(json.dumps(document), encoding="utf-8")


def _zero_hashes(out: Path) -> None:
    document = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
    for item in document["distribution"]:
        if "sha256" in item:
            item["sha256"] = "0" * 64
    (out / "croissant.json").write_text(json.dumps(document), encoding="utf-8")


# case -> (tampering, the problem lines expected: each a list of fragments one line must hold)
CASES: dict[str, tuple[Callable[[Path], None], list[list[str]]]] = {
    "croissant deleted": (lambda out: (out / "croissant.json").unlink(),
                          [["croissant.json: missing", "export it again"]]),
    "croissant invalid JSON": (lambda out: (out / "croissant.json").write_text("{not json", encoding="utf-8"),
                               [["croissant.json: not valid JSON", "line 1"]]),
    "croissant not Croissant": (lambda out: (out / "croissant.json").write_text('{"name": "x"}', encoding="utf-8"),
                                [["croissant.json: not Croissant 1.0 metadata"]]),
    "every sha256 zeroed": (_zero_hashes, [["test-00000-of-00001.parquet: SHA-256", "0000000000", "croissant.json"]]),
    "audio not audio": (lambda out: _set_audio(out, {0: b"not audio at all"}, rehash=True),
                        [["test-00000-of-00001.parquet, row 1, clip 'se-001'", "cannot be decoded"]]),
    "audio empty": (lambda out: _set_audio(out, {1: b""}, rehash=True),
                    [["row 2, clip 'se-002'", "empty (0 bytes)"]]),
    "audio bytes gone": (lambda out: _set_audio(out, {2: None}, rehash=True),
                         [["row 3, clip 'se-003'", "bytes are missing"]]),
    "audio changed, hash not": (lambda out: _set_audio(out, {0: b"not audio at all", 2: b""}, rehash=False),
                                [["test-00000-of-00001.parquet: SHA-256"], ["row 1, clip 'se-001'", "cannot be decoded"],
                                 ["row 3, clip 'se-003'", "empty (0 bytes)"]]),
    "a data file not listed": (lambda out: (out / "data" / "test-extra.parquet").write_bytes(_shard(out).read_bytes()),
                               [["test-extra.parquet: not listed in croissant.json"],
                                ["test-extra.parquet, row 1, field key", "repeats the key"]]),
}


def _counts(store) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return (s.execute(select(func.count()).select_from(Dataset)).scalar_one(),
                s.execute(select(func.count()).select_from(Clip)).scalar_one())


@pytest.mark.parametrize("case", list(CASES))
def test_a_tampered_export_is_refused_one_line_per_problem_and_nothing_is_imported(source, capsys, case):  # noqa: F811
    tamper, expected = CASES[case]
    out = _export(source)
    tamper(out)
    db, media = str(source["store"].sqlite_path), source["tmp"] / "media-copy"
    before = _counts(source["store"])
    capsys.readouterr()
    argv = ["--db", db, "import", "dataset", "--format", "hf", str(out), "--media-root", str(media), "--name", "copy"]
    assert main(argv) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    *problems, last = lines
    assert last.startswith("aglw: error: ") and "nothing was imported" in last and "--no-verify" in last, last
    assert len(problems) == len(expected), lines
    for fragments, line in zip(expected, problems):
        assert str(out) in line and all(f in line for f in fragments), (fragments, line)
    assert _counts(source["store"]) == before and not media.exists()

    # --no-verify: imported as it is, on purpose, and said so on stderr
    if case == "a data file not listed":
        return  # the copied shard repeats every key: the reader refuses it on its own
    assert main([*argv, "--no-verify"]) == 0
    err = capsys.readouterr().err
    assert any("not verified" in line and "--no-verify" in line for line in err.splitlines()), err
    assert _counts(source["store"]) == (before[0] + 1, before[1] + 3)


def test_json_output_lists_the_problems(source, capsys):  # noqa: F811
    out = _export(source)
    _zero_hashes(out)
    capsys.readouterr()
    assert main(["--db", str(source["store"].sqlite_path), "--json", "import", "dataset", "--format", "hf",
                 str(out), "--name", "copy"]) == 1
    value = json.loads(capsys.readouterr().out)
    assert value["exit_code"] == 1 and "nothing was imported" in value["error"]
    assert len(value["problems"]) == 1 and "SHA-256" in value["problems"][0]


def test_the_api_refuses_too_and_verify_false_imports_with_a_warning(source):  # noqa: F811
    from workbench.importing.hf import ExportNotVerified

    out = _export(source)
    _set_audio(out, {0: b"not audio at all"}, rehash=True)
    before = _counts(source["store"])
    with pytest.raises(ExportNotVerified) as refused:
        import_dataset(source["store"], out, format="hf", name="copy", media_root=source["tmp"] / "m")
    assert len(refused.value.problems) == 1 and _counts(source["store"]) == before
    report = import_dataset(source["store"], out, format="hf", name="copy", media_root=source["tmp"] / "m",
                            verify=False)
    assert report.stored and any("not verified" in w for w in report.warnings)


def test_an_export_as_written_is_verified_and_imported_without_a_warning(source):  # noqa: F811
    out = _export(source)
    from workbench.importing.hf import verify_export

    assert verify_export(out) == []
    report = import_dataset(source["store"], out, format="hf", name="copy", media_root=source["tmp"] / "m")
    assert report.stored and not any("verified" in w for w in report.warnings)


def test_every_exported_recording_decodes_through_datasets_to_the_projects_samples(source):  # noqa: F811
    out = _export(source)
    loaded = load(out)["test"]
    first = loaded[0]  # with datasets 4+ and no torchcodec, an Audio() column raised here
    assert set(first["audio"]) == {"bytes", "path"}
    clips = stored(source["store"])
    assert len(loaded) == len(clips) == 3
    for row in loaded:
        # as the card says: the bytes, decoded with soundfile
        samples, rate = sf.read(io.BytesIO(row["audio"]["bytes"]), dtype="float32", always_2d=True)
        ours = load_audio(source["folder"] / clips[row["key"]]["audio_path"])
        assert rate == ours.sample_rate and samples.shape == ours.samples.shape
        np.testing.assert_array_equal(samples, ours.samples)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "soundfile.read(io.BytesIO(" in card and "torchcodec" in card
