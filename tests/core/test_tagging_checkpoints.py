"""Checkpoint validation (wrong architecture, truncated, not a checkpoint) and downloads
from a local HTTP server started by the test."""

from __future__ import annotations

import http.server
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tests.core.test_tagging_ontology import write_small_ontology
from tests.support.fake_http import serve_folder
from workbench.errors import InputError
from workbench.tagging import assets
from workbench.tagging.assets import load_checkpoint, load_default_ontology, resolve_checkpoint
from workbench.tagging.download import DownloadError, digest_file, download_file, sha256_of
from workbench.tagging.model import build_model


@pytest.fixture(scope="module")
def mn01_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ckpt") / "mn01_as.pt"
    torch.manual_seed(3)
    torch.save(build_model("mn01").state_dict(), path)
    return path


def test_good_checkpoint_loads_strictly_in_eval_mode(mn01_file: Path) -> None:
    loaded = load_checkpoint(mn01_file, "mn01")
    assert loaded.arch == "mn01" and not loaded.model.training
    assert loaded.sha256 == sha256_of(mn01_file)
    original = torch.load(mn01_file, weights_only=True)
    assert torch.equal(loaded.model.state_dict()["classifier.5.weight"], original["classifier.5.weight"])


def test_wrong_architecture_is_named(mn01_file: Path) -> None:
    with pytest.raises(InputError, match=r"not a mn02 EfficientAT checkpoint .*shape mismatch.*pass --arch mn01"):
        load_checkpoint(mn01_file, "mn02")


def test_truncated_checkpoint_is_refused(mn01_file: Path, tmp_path: Path) -> None:
    truncated = tmp_path / "cut.pt"
    truncated.write_bytes(mn01_file.read_bytes()[: mn01_file.stat().st_size // 2])
    with pytest.raises(InputError, match=r"cut\.pt: not a readable PyTorch checkpoint .*truncated"):
        load_checkpoint(truncated, "mn01")


def test_not_a_checkpoint_at_all(tmp_path: Path) -> None:
    text = tmp_path / "notes.pt"
    text.write_text("hello, I am not a model\n", encoding="utf-8")
    with pytest.raises(InputError, match="not a readable PyTorch checkpoint"):
        load_checkpoint(text, "mn01")
    tensor_only = tmp_path / "tensor.pt"
    torch.save(torch.zeros(3), tensor_only)
    with pytest.raises(InputError, match="not a state dict"):
        load_checkpoint(tensor_only, "mn01")


def test_missing_keys_and_unknown_arch(mn01_file: Path, tmp_path: Path) -> None:
    state = torch.load(mn01_file, weights_only=True)
    del state["classifier.5.bias"]
    partial = tmp_path / "partial.pt"
    torch.save(state, partial)
    with pytest.raises(InputError, match=r"1 missing key\(s\), e\.g\. classifier\.5\.bias"):
        load_checkpoint(partial, "mn01")
    with pytest.raises(InputError, match="--arch resnet"):
        load_checkpoint(mn01_file, "resnet")


class _Handler(http.server.SimpleHTTPRequestHandler):
    lie_about_length: bool = False

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - keep test output quiet
        return

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        if self.path.startswith("/short/"):
            body = b"x" * 100
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture
def http_root(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "www"
    root.mkdir()
    with serve_folder(root, _Handler) as url:
        yield f"{url}/", root


def test_named_checkpoint_downloads_into_cache_then_reuses_it(
    http_root: tuple[str, Path], mn01_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root = http_root
    (root / "mn01_as_mAP_298.pt").write_bytes(mn01_file.read_bytes())
    monkeypatch.setattr(assets, "EFFICIENTAT_RELEASE_URL", url)
    path = resolve_checkpoint("mn01_as", show_progress=False)
    assert path == assets.cache_dir() / "efficientat" / "mn01_as_mAP_298.pt"
    assert path.read_bytes() == mn01_file.read_bytes()
    assert digest_file(path).read_text().strip() == sha256_of(mn01_file)
    (root / "mn01_as_mAP_298.pt").unlink()  # the server no longer has it: the cache must serve
    assert resolve_checkpoint("mn01_as", show_progress=False) == path
    loaded = assets.load_named_checkpoint("mn01_as", show_progress=False)
    assert loaded.name == "mn01_as" and loaded.arch == "mn01"


def test_damaged_cache_file_is_fetched_again(http_root: tuple[str, Path], mn01_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, root = http_root
    (root / "mn01_as_mAP_298.pt").write_bytes(mn01_file.read_bytes())
    monkeypatch.setattr(assets, "EFFICIENTAT_RELEASE_URL", url)
    path = resolve_checkpoint("mn01_as", show_progress=False)
    path.write_bytes(path.read_bytes()[:1000])
    assert resolve_checkpoint("mn01_as", show_progress=False).read_bytes() == mn01_file.read_bytes()


def test_download_of_wrong_content_leaves_nothing(http_root: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    url, root = http_root
    (root / "mn01_as_mAP_298.pt").write_bytes(b"<html>rate limited</html>")
    monkeypatch.setattr(assets, "EFFICIENTAT_RELEASE_URL", url)
    with pytest.raises(InputError, match="not a readable PyTorch checkpoint"):
        resolve_checkpoint("mn01_as", show_progress=False)
    assert list((assets.cache_dir() / "efficientat").iterdir()) == []


def test_short_read_404_and_digest_mismatch(http_root: tuple[str, Path], tmp_path: Path) -> None:
    url, root = http_root
    dest = tmp_path / "out" / "file.bin"
    with pytest.raises(DownloadError, match=r"cut short \(100 of 1000 bytes\)|cannot download"):
        download_file(url + "short/file.bin", dest, show_progress=False)
    assert not dest.exists() and not dest.with_name("file.bin.part").exists()
    with pytest.raises(DownloadError, match="HTTP 404"):
        download_file(url + "absent.bin", dest, show_progress=False)
    (root / "data.bin").write_bytes(b"abc")
    with pytest.raises(DownloadError, match="integrity check failed"):
        download_file(url + "data.bin", dest, expected_sha256="0" * 64, show_progress=False)
    assert not dest.exists()
    digest = download_file(url + "data.bin", dest, show_progress=False)
    assert dest.read_bytes() == b"abc" and digest == sha256_of(dest)


def test_local_directory_wins_over_download(mn01_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = tmp_path / "models"
    local.mkdir()
    (local / "mn01_as.pt").write_bytes(mn01_file.read_bytes())
    monkeypatch.setenv("AGLW_EFFICIENTAT_DIR", str(local))
    monkeypatch.setattr(assets, "EFFICIENTAT_RELEASE_URL", "http://127.0.0.1:9/unreachable/")
    assert resolve_checkpoint("mn01_as") == local / "mn01_as.pt"
    with pytest.raises(InputError, match="unknown model 'mn99_as'"):
        resolve_checkpoint("mn99_as")


def test_ontology_download_and_local_paths(http_root: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, root = http_root
    write_small_ontology(root)
    monkeypatch.setattr(assets, "ONTOLOGY_URL", url + "ontology.json")
    monkeypatch.setattr(assets, "CLASS_INDEX_URL", url + "class_labels_indices.csv")
    ontology = load_default_ontology(show_progress=False)
    assert len(ontology.classes) == 527
    assert (assets.cache_dir() / "audioset" / "ontology.json").is_file()

    local_ontology, _ = write_small_ontology(tmp_path / "offline")
    monkeypatch.setenv("AGLW_ONTOLOGY", str(local_ontology))
    monkeypatch.setattr(assets, "ONTOLOGY_URL", "http://127.0.0.1:9/nothing")
    assert assets.resolve_ontology_paths(download=False) == (local_ontology, local_ontology.with_name("class_labels_indices.csv"))
    local_ontology.write_text("{broken", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        load_default_ontology(show_progress=False)


def test_download_with_progress_bar_and_known_hash(http_root: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pooch drives the rich bar (total, update, reset, close) and checks the published hash."""
    import hashlib

    url, root = http_root
    payload = bytes(range(256)) * 1024
    (root / "model.bin").write_bytes(payload)
    dest = tmp_path / "cache" / "model.bin"
    expected = hashlib.sha256(payload).hexdigest()
    assert download_file(url + "model.bin", dest, expected_sha256=expected.upper(), show_progress=True) == expected
    assert dest.read_bytes() == payload and digest_file(dest).read_text().strip() == expected
    assert capsys.readouterr().out == ""  # the bar and pooch's messages never reach stdout
    dest.write_bytes(b"damaged")
    assert download_file(url + "model.bin", dest, show_progress=False) == expected  # replaces a stale file
