"""The tagger's numeric precision: conformant (``full``) by default on every device, ``fast`` on request.

PyTorch's defaults let cuDNN convolutions run in TF32 (10-bit mantissa) on Ampere and later
GPUs, which moved the tagger's probabilities by up to 3.6e-3 from the reference on an H200 — 36
times the README's 1e-4 promise. So the tagger sets the float32 precision of every backend
itself while it runs:

* ``full`` (the default): IEEE float32 everywhere (CUDA matmul, cuDNN convolutions, oneDNN on
  CPU), no autocast. Within the fixture's 1e-4 on logits on CPU and on CUDA.
* ``fast`` (``--precision fast``): on CUDA, TF32 for matmuls and convolutions and the network
  under bf16 autocast; the log-mel front end stays float32 (TF32 only). Its measured tolerance
  is :data:`FAST_TOLERANCE` on clip probabilities, :data:`FAST_TIMELINE_TOLERANCE` on the timeline. On CPU ``fast`` computes exactly what ``full`` does (TF32 does not
  exist there and bf16 is slower than float32 on most CPUs), but the run still records what was
  asked.

The settings are process-wide in PyTorch; they are applied while any tagger computes (counted,
so concurrent taggers in threads do not restore them under each other's feet, ``full`` winning
over ``fast``) and the previous values are put back when the last one leaves.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import torch

PRECISIONS = ("full", "fast")
DEFAULT_PRECISION = "full"
# Largest |Δp| of ``fast`` against ``full``, measured with bench/gpu_tagging.py: bf16 autocast of the
# network (emulated by CPU autocast; bf16's 8-bit mantissa dominates TF32's 10 bits) on the mn04
# fixture weights: 9.8e-3 on the fixture input (clip), 1.7e-2 on the clip probabilities and 8.4e-2
# on the timelines of the two real 128–141 s AGL1K recordings (2026-11-27). The bench prints the
# figure of the GPU it runs on.
FAST_TOLERANCE = 2e-2
FAST_TIMELINE_TOLERANCE = 1e-1
# The promise of ``full``: logits within 1e-4 of the reference (README, conformance fixture).
FULL_TOLERANCE = 1e-4


def check_precision(precision: str) -> str:
    """``precision`` if it is one of :data:`PRECISIONS`, else a ValueError naming them."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    return precision


def figure(value: float) -> str:
    """A tolerance as written in the docs and the CLI help: ``1e-4``."""
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def describe(precision: str) -> str:
    """One line on what ``precision`` promises (for the CLI and the stored run)."""
    if precision == "fast":
        return (f"fast: TF32 + bf16 autocast on CUDA, clip probabilities within {figure(FAST_TOLERANCE)} "
                f"(timeline {figure(FAST_TIMELINE_TOLERANCE)}) of the reference")
    return f"full: IEEE float32 on every device, logits within {figure(FULL_TOLERANCE)} of the reference"


def _knobs() -> list[Any]:
    """The backends whose float32 precision PyTorch ≥ 2.9 sets one by one (``fp32_precision``)."""
    backends = torch.backends
    found = []
    for parent, names in ((getattr(backends, "cuda", None), ("matmul",)),
                          (getattr(backends, "cudnn", None), ("conv", "rnn")),
                          (getattr(backends, "mkldnn", None), ("matmul", "conv", "rnn"))):
        for name in names:
            knob = getattr(parent, name, None)
            if knob is not None and hasattr(knob, "fp32_precision"):
                found.append(knob)
    return found


def _read() -> tuple[str, Any]:
    """The current settings, through the API the process uses.

    PyTorch ≥ 2.9 has two APIs for these settings and refuses to answer the old one once the
    new one was used (a RuntimeError about "a mix of the legacy and new APIs"). The old one —
    ``allow_tf32`` and ``set_float32_matmul_precision``, what most code sets — is used unless
    the process already went over to the new one.
    """
    try:
        return "legacy", (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
                          torch.get_float32_matmul_precision())
    except RuntimeError:
        return "new", [knob.fp32_precision for knob in _knobs()]


def _write(state: tuple[str, Any]) -> None:
    kind, values = state
    if kind == "new":
        for knob, value in zip(_knobs(), values):
            knob.fp32_precision = value
    else:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, matmul = values
        torch.set_float32_matmul_precision(matmul)


def _settings(kind: str, tf32: bool) -> tuple[str, Any]:
    """Every backend at one precision, through the API of ``kind``."""
    if kind == "new":
        return "new", ["tf32" if tf32 else "ieee"] * len(_knobs())
    return "legacy", (tf32, tf32, "high" if tf32 else "highest")


_lock = threading.Lock()
_users = {"full": 0, "fast": 0}
_saved: tuple[str, Any] | None = None


@contextmanager
def float32_precision(precision: str) -> Iterator[None]:
    """Set PyTorch's float32 precision for ``precision`` (``fast``: TF32) while inside; restore after."""
    global _saved
    check_precision(precision)
    with _lock:
        if _saved is None:
            _saved = _read()
        _users[precision] += 1
        _write(_settings(_saved[0], tf32=_users["full"] == 0))
    try:
        yield
    finally:
        with _lock:
            _users[precision] -= 1
            if not any(_users.values()):
                state, _saved = _saved, None
                if state is not None:
                    _write(state)
            elif _saved is not None:
                _write(_settings(_saved[0], tf32=_users["full"] == 0))


def autocast_dtype(device: torch.device, precision: str) -> torch.dtype | None:
    """The autocast type of the network: bf16 for ``fast`` on CUDA, None (float32) otherwise."""
    return torch.bfloat16 if check_precision(precision) == "fast" and device.type == "cuda" else None


def autocast(device: torch.device, precision: str) -> Any:
    """``torch.autocast`` for the network's forward passes, or a no-op (thread-local in PyTorch)."""
    dtype = autocast_dtype(device, precision)
    return nullcontext() if dtype is None else torch.autocast(device_type=device.type, dtype=dtype)


def effective(device: torch.device, precision: str) -> str:
    """What ``precision`` computes on ``device``: ``fast`` on CUDA only, ``full`` everywhere else."""
    return "fast" if check_precision(precision) == "fast" and device.type == "cuda" else "full"
