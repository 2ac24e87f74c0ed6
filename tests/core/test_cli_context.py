"""Machine-readable CLI output: numpy values of any shape become plain JSON."""

from __future__ import annotations

import json
import math

import numpy as np

from cli.context import emit_json


def test_emit_json_handles_numpy_scalars_arrays_and_non_finite(capsys):
    payload = {
        "scalar": np.float32(0.25),
        "integer": np.int64(7),
        "zero_d": np.array(3.5),
        "vector": np.array([1.0, 2.0, math.nan]),
        "matrix": np.arange(4, dtype=np.int16).reshape(2, 2),
        "nested": [np.array([math.inf]), {1: np.bool_(True)}],
    }
    emit_json(payload)
    data = json.loads(capsys.readouterr().out)
    assert data == {
        "scalar": 0.25,
        "integer": 7,
        "zero_d": 3.5,
        "vector": [1.0, 2.0, None],
        "matrix": [[0, 1], [2, 3]],
        "nested": [[None], {"1": True}],
    }
