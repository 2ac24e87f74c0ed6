"""Reliability: acknowledged edits survive SIGKILL; two annotators on PostgreSQL lose nothing."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlmodel import select

from storage import open_store
from storage.models import Clip, Dataset, LabelHistory
from workbench.labels import LabelService

WRITER = Path(__file__).with_name("label_writer.py")
REPO = Path(__file__).resolve().parents[2]


def _seed_clips(db: str, n: int = 12) -> None:
    store = open_store(db)
    with store.write() as s:
        ds = Dataset(name="t")
        s.add(ds)
        s.flush()
        s.add_all([Clip(dataset_id=ds.id, key=f"clip_{i}") for i in range(n)])
    store.dispose()


def _writer(db: str, annotator: str, n_edits: int, seed: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, str(WRITER), db, annotator, str(n_edits), str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _acks(lines: list[str]) -> list[tuple[str, int, str, int]]:
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) == 6 and parts[0] == "ACK":
            out.append((parts[1], int(parts[2]), parts[3], int(parts[4])))
    return out


@pytest.mark.slow
def test_sigkill_never_loses_an_acknowledged_edit(sqlite_path: Path) -> None:
    db = str(sqlite_path)
    _seed_clips(db)
    rng = random.Random(20261122)
    acknowledged: list[tuple[str, int, str, int]] = []
    for round_no in range(20):
        proc = _writer(db, "crash-tester", 100_000, round_no)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read() if proc.stderr else ""
        time.sleep(rng.uniform(0.01, 0.25))  # a random moment inside the write loop
        proc.send_signal(signal.SIGKILL)
        out, _err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        acknowledged.extend(_acks(out.splitlines()))
    assert len(acknowledged) > 20, "the writer should have acknowledged edits before being killed"

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        stored = {row[0] for row in conn.execute("SELECT command_id FROM label_history")}
    missing = [a for a in acknowledged if a[0] not in stored]
    assert missing == [], f"{len(missing)} acknowledged edits lost"


@pytest.mark.slow
@pytest.mark.postgres
def test_two_annotators_500_edits_each_on_postgres(pg_url: str) -> None:
    _seed_clips(pg_url, n=10)
    procs = {name: _writer(pg_url, name, 500, seed) for seed, name in enumerate(["ana", "ben"])}
    outputs = {name: p.communicate(timeout=240) for name, p in procs.items()}
    for name, p in procs.items():
        assert p.returncode == 0, outputs[name][1][-2000:]

    store = open_store(pg_url)
    service = LabelService(store)
    annotators = {a.name: a.id for a in service.list_annotators()}
    for name, (out, _err) in outputs.items():
        acks = _acks(out.splitlines())
        assert len(acks) == 500
        history = service.history(annotator_id=annotators[name])
        # complete history: one contribution entry per changed edit, every acknowledged command present
        assert {a[0] for a in acks} <= {h.command_id for h in history}
        # no lost update: each label row holds this annotator's last acknowledged value
        last: dict[tuple[int, str], int] = {}
        for _cid, clip_id, category, value in acks:
            last[(clip_id, category)] = value
        rows = {
            (lab.clip_id, lab.category_id): lab.contribution
            for lab in service.category_labels(annotator_id=annotators[name])
        }
        assert rows == last
        # history replays to the same state
        replay: dict[tuple[int, str], int] = {}
        for h in history:
            if h.field == "contribution":
                replay[(h.clip_id, h.category_id)] = h.new_value
        assert replay == last
    with store.session() as s:
        assert len(s.exec(select(LabelHistory.id)).all()) >= 1000
    store.dispose()
