"""Where checkpoints and the AudioSet ontology come from, and loading checkpoints safely.

Lookup order for a named checkpoint (``mn10_as``):

1. ``AGLW_EFFICIENTAT_DIR`` (environment) or ``efficientat_dir`` (config.toml): a file named
   like the official release asset (``mn10_as_mAP_471.pt``) or ``<name>.pt``;
2. the user cache, ``cache_dir()/efficientat/<asset>``;
3. a download from the official EfficientAT GitHub release into the cache.

The ontology is ``AGLW_ONTOLOGY`` / ``ontology_path``, else the cache (downloaded from the
AudioSet GitHub repository). The 527-class index is ``AGLW_AUDIOSET_CLASSES``, else
``class_labels_indices.csv`` next to the ontology file, else the cache (downloaded from
Google's AudioSet storage).

Checkpoints are read with ``torch.load(weights_only=True)`` and compared key by key and
shape by shape with the manifest computed from :mod:`workbench.tagging.model` before any
weight reaches the model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from workbench.config import Settings, cache_dir
from workbench.errors import InputError
from workbench.tagging.download import download_file, sha256_of, verify_cached
from workbench.tagging.model import MobileNetAudioTagger, build_model, expected_manifest, width_of_arch
from workbench.tagging.ontology import Ontology, configured_ontology_paths, load_ontology, ontology_cache_dir

EFFICIENTAT_RELEASE_URL = "https://github.com/fschmid56/EfficientAT/releases/download/v0.0.1/"
ONTOLOGY_URL = "https://raw.githubusercontent.com/audioset/ontology/master/ontology.json"
CLASS_INDEX_URL = "https://storage.googleapis.com/us_audioset/youtube_corpus/v1/csv/class_labels_indices.csv"
DEFAULT_MODEL = "mn10_as"


@dataclass(frozen=True)
class CheckpointSpec:
    """An official AudioSet checkpoint: its short name, architecture and release asset."""

    name: str
    arch: str
    asset: str

    @property
    def url(self) -> str:
        return EFFICIENTAT_RELEASE_URL + self.asset


OFFICIAL_CHECKPOINTS: dict[str, CheckpointSpec] = {
    spec.name: spec
    for spec in (
        CheckpointSpec("mn01_as", "mn01", "mn01_as_mAP_298.pt"),
        CheckpointSpec("mn02_as", "mn02", "mn02_as_mAP_378.pt"),
        CheckpointSpec("mn04_as", "mn04", "mn04_as_mAP_432.pt"),
        CheckpointSpec("mn05_as", "mn05", "mn05_as_mAP_443.pt"),
        CheckpointSpec("mn10_as", "mn10", "mn10_as_mAP_471.pt"),
        CheckpointSpec("mn20_as", "mn20", "mn20_as_mAP_478.pt"),
        CheckpointSpec("mn30_as", "mn30", "mn30_as_mAP_482.pt"),
        CheckpointSpec("mn40_as", "mn40", "mn40_as_mAP_484.pt"),
    )
}


@dataclass(frozen=True)
class LoadedCheckpoint:
    """A model with verified weights, in eval mode, plus where they came from."""

    model: MobileNetAudioTagger
    name: str
    arch: str
    path: Path
    sha256: str


def _configured_dir(env_name: str, setting: str | None) -> Path | None:
    value = os.environ.get(env_name) or setting
    return Path(value).expanduser() if value else None


def checkpoint_spec(name: str) -> CheckpointSpec:
    """The official checkpoint of that name, or a clear error listing the known ones."""
    spec = OFFICIAL_CHECKPOINTS.get(name.strip().lower())
    if spec is None:
        raise InputError(
            f"unknown model {name!r}; use one of {', '.join(OFFICIAL_CHECKPOINTS)} "
            "or pass --checkpoint PATH --arch mnXX"
        )
    return spec


def resolve_checkpoint(name: str = DEFAULT_MODEL, *, download: bool = True, show_progress: bool = True) -> Path:
    """Path of a named official checkpoint: local directory, cache, or a fresh download.

    Raises
    ------
    InputError
        Unknown name, or not found locally and ``download`` is False.
    DownloadError
        The download failed.
    """
    spec = checkpoint_spec(name)
    local_dir = _configured_dir("AGLW_EFFICIENTAT_DIR", Settings.load().efficientat_dir)
    if local_dir is not None:
        for candidate in (local_dir / spec.asset, local_dir / f"{spec.name}.pt"):
            if candidate.is_file():
                return candidate
    cached = cache_dir() / "efficientat" / spec.asset
    if cached.is_file() and verify_cached(cached):
        return cached
    if not download:
        where = f"{local_dir} or {cached}" if local_dir else str(cached)
        raise InputError(f"checkpoint {spec.name} not found in {where}; download {spec.url} there")
    download_file(
        spec.url,
        cached,
        description=f"downloading {spec.asset}",
        validate=lambda path: _read_state_dict(path, spec.arch),
        show_progress=show_progress,
        provide_hint=f"put {spec.name}.pt in a folder named by AGLW_EFFICIENTAT_DIR (or efficientat_dir in "
        "config.toml), or pass --checkpoint PATH --arch mnXX",
    )
    return cached


def _read_state_dict(path: Path, arch: str) -> dict[str, torch.Tensor]:
    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError as exc:
        raise InputError(f"{path}: checkpoint file not found") from exc
    except Exception as exc:  # noqa: BLE001 - the weights-only unpickler raises KeyError, EOFError… on garbage
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(
            f"{path}: not a readable PyTorch checkpoint ({first_line}); the file is truncated or not a "
            f"checkpoint at all — download the official {arch} AudioSet checkpoint again"
        ) from exc
    if isinstance(loaded, dict) and "state_dict" in loaded and isinstance(loaded["state_dict"], dict):
        loaded = loaded["state_dict"]
    if not isinstance(loaded, dict) or not all(isinstance(v, torch.Tensor) for v in loaded.values()):
        raise InputError(f"{path}: holds a {type(loaded).__name__}, not a state dict of tensors; it is not an EfficientAT checkpoint")
    check_manifest(loaded, arch, path)
    return loaded


def check_manifest(state_dict: dict[str, torch.Tensor], arch: str, path: Path | str = "checkpoint") -> None:
    """Compare a state dict's keys and shapes with the manifest of ``arch``.

    Raises
    ------
    InputError
        Names the file, the first differing keys and the architecture the shapes suggest.
    """
    expected = expected_manifest(arch)
    actual = {key: tuple(value.shape) for key, value in state_dict.items()}
    if actual == expected:
        return
    missing = sorted(set(expected) - set(actual))
    unexpected = sorted(set(actual) - set(expected))
    wrong_shape = [k for k in expected if k in actual and actual[k] != expected[k]]
    details = []
    if missing:
        details.append(f"{len(missing)} missing key(s), e.g. {missing[0]}")
    if unexpected:
        details.append(f"{len(unexpected)} unexpected key(s), e.g. {unexpected[0]}")
    if wrong_shape:
        key = wrong_shape[0]
        details.append(f"{len(wrong_shape)} shape mismatch(es), e.g. {key} is {list(actual[key])}, expected {list(expected[key])}")
    guess = _guess_arch(actual)
    suggestion = f"; its shapes match {guess}, pass --arch {guess}" if guess and guess != arch else ""
    raise InputError(f"{path}: not a {arch} EfficientAT checkpoint ({'; '.join(details)}){suggestion}")


def _guess_arch(actual: dict[str, tuple[int, ...]]) -> str | None:
    from workbench.tagging.model import ARCH_WIDTHS

    for candidate in ARCH_WIDTHS:
        if expected_manifest(candidate) == actual:
            return candidate
    return None


def load_checkpoint(path: str | Path, arch: str, *, name: str | None = None, device: str = "cpu") -> LoadedCheckpoint:
    """Load and verify a state dict, then build the model with ``strict=True`` (eval mode).

    Parameters
    ----------
    path
        The checkpoint file (a plain state dict, as the official releases are).
    arch
        Architecture name such as ``mn04`` or ``mn10``.
    name
        Model name to record (default: the file stem).
    device
        ``cpu`` or ``cuda`` (``cuda:N``).

    Raises
    ------
    InputError
        Unknown architecture, unreadable/truncated file, or keys/shapes of another architecture.
    """
    path = Path(path)
    try:
        width_of_arch(arch)
    except ValueError as exc:
        raise InputError(f"--arch {arch}: {exc}") from exc
    arch = arch.strip().lower()
    state_dict = _read_state_dict(path, arch)
    model = build_model(arch)
    model.load_state_dict(state_dict, strict=True)
    model.eval()
    model.to(resolve_device(device))
    return LoadedCheckpoint(model=model, name=name or path.stem, arch=arch, path=path, sha256=sha256_of(path))


def load_named_checkpoint(name: str = DEFAULT_MODEL, *, device: str = "cpu", show_progress: bool = True) -> LoadedCheckpoint:
    """Resolve (downloading if needed) and load an official checkpoint by short name."""
    spec = checkpoint_spec(name)
    path = resolve_checkpoint(spec.name, show_progress=show_progress)
    return load_checkpoint(path, spec.arch, name=spec.name, device=device)


def resolve_device(device: str) -> torch.device:
    """A torch device from ``cpu`` / ``cuda`` / ``cuda:N``; a clear error when CUDA is absent."""
    try:
        resolved = torch.device(device)
    except RuntimeError as exc:
        raise InputError(f"--device {device}: not a device name; use cpu or cuda") from exc
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"--device {device}: no CUDA GPU is available on this machine; use --device cpu")
    if resolved.type not in {"cpu", "cuda"}:
        raise InputError(f"--device {device}: unsupported; use cpu or cuda")
    return resolved


def resolve_ontology_paths(*, download: bool = True, show_progress: bool = True) -> tuple[Path, Path]:
    """Paths of ``ontology.json`` and ``class_labels_indices.csv`` (downloading into the cache if needed)."""
    ontology_path, classes_path = configured_ontology_paths()
    cache = ontology_cache_dir()
    if ontology_path is None:
        ontology_path = _cached_or_download(ONTOLOGY_URL, cache / "ontology.json", download, show_progress)
    if classes_path is None:
        classes_path = _cached_or_download(CLASS_INDEX_URL, cache / "class_labels_indices.csv", download, show_progress)
    return ontology_path, classes_path


def _cached_or_download(url: str, dest: Path, download: bool, show_progress: bool) -> Path:
    if dest.is_file() and verify_cached(dest):
        return dest
    if not download:
        raise InputError(f"{dest.name} not found in {dest.parent}; set AGLW_ONTOLOGY / AGLW_AUDIOSET_CLASSES or download {url}")
    variable = "AGLW_ONTOLOGY (or ontology_path in config.toml)" if dest.name == "ontology.json" else "AGLW_AUDIOSET_CLASSES"
    download_file(url, dest, description=f"downloading {dest.name}", show_progress=show_progress,
                  provide_hint=f"set {variable} to a local copy of {dest.name}")
    return dest


def load_default_ontology(*, show_progress: bool = True) -> Ontology:
    """The ontology and class index from the configured paths or the cache (downloaded on first use).

    Both files are validated together after download; a damaged pair is removed from the cache so the
    next run fetches it again.
    """
    ontology_path, classes_path = resolve_ontology_paths(show_progress=show_progress)
    try:
        return load_ontology(ontology_path, classes_path)
    except InputError:
        for path in (ontology_path, classes_path):
            if path.parent == ontology_cache_dir():
                path.unlink(missing_ok=True)
        raise
