"""The tagger's precision: IEEE float32 on every device unless `fast` is asked for (checked without a GPU)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

from tests.core.test_tagging_model import calibrated_model
from workbench.tagging import precision as precision_module
from workbench.tagging.inference import AudioTagger
from workbench.tagging.precision import (FAST_TOLERANCE, FULL_TOLERANCE, autocast_dtype, effective,
                                         float32_precision)

CUDA = torch.device("cuda")
CPU = torch.device("cpu")


def _legacy_flags() -> tuple[bool, bool, str]:
    """What PyTorch reports through the settings users (and the issue) name."""
    return (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
            torch.get_float32_matmul_precision())


@pytest.fixture
def tf32_everywhere() -> Iterator[None]:
    """PyTorch set to TF32 everywhere, as a user or a library may leave it; put back afterwards."""
    before = precision_module._read()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.set_float32_matmul_precision("high")
    assert _legacy_flags() == (True, True, "high")
    yield
    precision_module._write(before)


def test_full_precision_switches_tf32_off_while_inside_and_restores(tf32_everywhere: None) -> None:
    with float32_precision(effective(CUDA, "full")):
        assert _legacy_flags() == (False, False, "highest")
        with float32_precision("full"):  # nested: still full, and the outer scope's values survive it
            assert _legacy_flags() == (False, False, "highest")
        assert _legacy_flags() == (False, False, "highest")
    assert _legacy_flags() == (True, True, "high")


def test_fast_is_tf32_and_bf16_on_cuda_only(tf32_everywhere: None) -> None:
    assert effective(CUDA, "fast") == "fast" and effective(CUDA, "full") == "full"
    assert effective(CPU, "fast") == "full"  # TF32 does not exist on CPUs; bf16 would be slower there
    assert autocast_dtype(CUDA, "fast") is torch.bfloat16
    assert autocast_dtype(CUDA, "full") is None and autocast_dtype(CPU, "fast") is None
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    with float32_precision(effective(CUDA, "fast")):
        assert _legacy_flags() == (True, True, "high")
        with float32_precision("full"):  # a conformant tagger beside a fast one wins
            assert _legacy_flags() == (False, False, "highest")
        assert _legacy_flags() == (True, True, "high")
    assert _legacy_flags() == (False, False, "highest")
    with pytest.raises(ValueError, match="expected one of full, fast"):
        effective(CUDA, "half")


def test_tagger_computes_in_full_precision_unless_asked(tf32_everywhere: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every forward pass and the front end run inside the precision the tagger derives for its device."""
    seen: list[tuple[bool, bool, str]] = []
    tagger = AudioTagger(calibrated_model(), threads=1, optimise=False)
    assert tagger.precision == "full"
    trunk = tagger._trunk
    monkeypatch.setattr(tagger, "_trunk", lambda mel: seen.append(_legacy_flags()) or trunk(mel))
    wave = (0.1 * np.random.default_rng(0).standard_normal(12 * 32_000)).astype(np.float32)
    tagger.tag(wave)
    assert seen and set(seen) == {(False, False, "highest")}
    assert _legacy_flags() == (True, True, "high")  # the user's settings are back after the call

    # A tagger whose device asks for fast (what a CUDA device with --precision fast gives) runs TF32.
    monkeypatch.setattr("workbench.tagging.inference.effective", lambda device, precision: precision)
    fast = AudioTagger(calibrated_model(), threads=1, optimise=False, precision="fast")
    trunk_fast = fast._trunk
    seen.clear()
    monkeypatch.setattr(fast, "_trunk", lambda mel: seen.append(_legacy_flags()) or trunk_fast(mel))
    fast.tag(wave)
    assert set(seen) == {(True, True, "high")}
    with pytest.raises(ValueError, match="precision 'half'"):
        AudioTagger(calibrated_model(), precision="half")


def test_the_cli_states_the_measured_tolerances() -> None:
    from cli.tagging_cmds import _PRECISION_HELP

    full, fast = precision_module.figure(FULL_TOLERANCE), precision_module.figure(FAST_TOLERANCE)
    assert full == "1e-4" and f"within {full}" in _PRECISION_HELP and f"within {fast}" in _PRECISION_HELP
    timeline = precision_module.figure(precision_module.FAST_TIMELINE_TOLERANCE)
    assert f"timeline {timeline}" in _PRECISION_HELP and fast in precision_module.describe("fast")
