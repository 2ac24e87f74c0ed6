"""Audio loader: decoding, streaming, media-root confinement and the bad-input catalogue."""

from __future__ import annotations

import hashlib
import os
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from workbench.audio.loader import (
    AudioData,
    AudioError,
    audio_info,
    content_hash,
    load_audio,
)
from workbench.audio.streaming import DecodeStream, iter_blocks
from workbench.errors import InputError


def _wav_header(sample_rate: int, channels: int, data: bytes, bits: int = 16) -> bytes:
    block_align = channels * bits // 8
    fmt = struct.pack("<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * block_align, block_align, bits)
    return b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt " + fmt + b"data" + struct.pack("<I", len(data)) + data


@pytest.fixture
def stereo_wav(tmp_path: Path) -> Path:
    rate = 8000
    t = np.arange(rate) / rate
    left = 0.5 * np.sin(2 * np.pi * 440 * t)
    right = 0.25 * np.sin(2 * np.pi * 880 * t)
    path = tmp_path / "tone.wav"
    sf.write(path, np.stack([left, right], axis=1), rate, subtype="PCM_16")
    return path


def test_load_keeps_native_rate_and_shape(stereo_wav: Path) -> None:
    audio = load_audio(stereo_wav)
    assert isinstance(audio, AudioData)
    assert audio.sample_rate == 8000
    assert audio.samples.shape == (8000, 2)
    assert audio.samples.dtype == np.float32
    assert audio.info.n_channels == 2 and audio.info.frames == 8000
    assert audio.info.format == "WAV"
    assert np.max(np.abs(audio.samples[:, 0])) == pytest.approx(0.5, abs=1e-3)
    assert np.max(np.abs(audio.samples[:, 1])) == pytest.approx(0.25, abs=1e-3)


def test_load_mono_resample_and_max_seconds(stereo_wav: Path) -> None:
    audio = load_audio(stereo_wav, sample_rate=16000, mono=True, max_seconds=0.5)
    assert audio.sample_rate == 16000
    assert audio.samples.shape == (8000, 1)
    same_rate = load_audio(stereo_wav, sample_rate=8000)
    np.testing.assert_array_equal(same_rate.samples, load_audio(stereo_wav).samples)


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.wav"
    with pytest.raises(AudioError, match=r"nowhere\.wav: file not found"):
        load_audio(path)


def test_unreadable_file(tmp_path: Path, stereo_wav: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests run as root here, where chmod 000 does not stop reading; simulate the denial.
    monkeypatch.setattr(os, "access", lambda *_args, **_kw: False)
    with pytest.raises(AudioError, match=r"tone\.wav: file is not readable"):
        load_audio(stereo_wav)


def test_directory_is_not_audio(tmp_path: Path) -> None:
    with pytest.raises(AudioError, match="not a regular file"):
        audio_info(tmp_path)


def test_zero_length_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.mp3"
    path.write_bytes(b"")
    with pytest.raises(AudioError, match=r"empty\.mp3: file is empty"):
        load_audio(path)


def test_corrupt_bytes(tmp_path: Path) -> None:
    path = tmp_path / "noise.mp3"
    path.write_bytes(bytes(np.random.default_rng(1).integers(0, 256, 4000, dtype=np.uint8)))
    with pytest.raises(AudioError, match=r"noise\.mp3: .*(not a recognised audio file|corrupt)"):
        load_audio(path)


def test_text_file_with_audio_extension(tmp_path: Path) -> None:
    path = tmp_path / "notes.wav"
    path.write_text("these are field notes, not a recording\n" * 20)
    with pytest.raises(AudioError, match=r"notes\.wav: .*convert it"):
        audio_info(path)


def test_wrong_extension_is_detected_by_content(tmp_path: Path, stereo_wav: Path) -> None:
    renamed = tmp_path / "actually_wav.mp3"
    renamed.write_bytes(stereo_wav.read_bytes())
    audio = load_audio(renamed)
    assert audio.info.format == "WAV"
    assert audio.samples.shape == (8000, 2)


def test_unsupported_codec(tmp_path: Path) -> None:
    # An MP4 box header with an AAC-like payload: no decoder in this environment.
    path = tmp_path / "clip.m4a"
    path.write_bytes(struct.pack(">I", 24) + b"ftypM4A " + b"\0" * 12 + b"\x01" * 500)
    with pytest.raises(AudioError, match=r"clip\.m4a: .*(MP4|not a recognised)"):
        load_audio(path)


@pytest.mark.parametrize(
    ("rate", "channels", "pattern"),
    [(0, 1, "declares an implausible sample rate of 0 Hz"), (44100, 64, "declares 64 channels")],
)
def test_absurd_header_values(tmp_path: Path, rate: int, channels: int, pattern: str) -> None:
    path = tmp_path / f"absurd_{rate}_{channels}.wav"
    path.write_bytes(_wav_header(rate, channels, b"\0" * (channels * 2 * 50)))
    with pytest.raises(AudioError, match=rf"absurd_{rate}_{channels}\.wav: header {pattern}"):
        load_audio(path)


def test_nan_and_inf_samples_are_zeroed_and_counted(tmp_path: Path) -> None:
    samples = np.full(800, 0.25, dtype=np.float32)
    samples[[3, 10]] = np.nan
    samples[20] = np.inf
    samples[21] = -np.inf
    path = tmp_path / "nan.wav"
    sf.write(path, samples, 8000, subtype="FLOAT")
    audio = load_audio(path)
    assert audio.non_finite_samples == 4
    assert np.isfinite(audio.samples).all()
    assert audio.samples[[3, 10, 20, 21], 0].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert audio.samples[4, 0] == pytest.approx(0.25)
    blocks = [block for _, block in iter_blocks(path, 100)]
    assert np.isfinite(np.concatenate(blocks)).all()


def test_silence_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "silence.flac"
    sf.write(path, np.zeros((4000, 2), dtype=np.float32), 8000)
    audio = load_audio(path)
    assert audio.samples.shape == (4000, 2)
    assert not audio.samples.any()


def test_iter_blocks_with_overlap_reassembles(stereo_wav: Path) -> None:
    whole = load_audio(stereo_wav).samples
    starts = []
    for start, block in iter_blocks(stereo_wav, 1000, overlap_frames=200):
        starts.append(start)
        np.testing.assert_array_equal(block, whole[start : start + block.shape[0]])
    assert starts[:3] == [0, 800, 1600]
    assert starts[-1] + 1000 >= whole.shape[0]


def test_decode_stream_reads_longer_only_between_a_short_first_and_short_last_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.audio import streaming

    rng = np.random.default_rng(4)
    path = tmp_path / "long.wav"
    sf.write(path, (rng.standard_normal((40_000, 2)) * 0.1).astype(np.float32), 8000, subtype="FLOAT")
    whole = load_audio(path).samples
    reads: list[int] = []
    real_read = sf.SoundFile.read

    def read(self: sf.SoundFile, frames: int = -1, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        reads.append(frames)
        return real_read(self, frames, *args, **kwargs)

    monkeypatch.setattr(sf.SoundFile, "read", read)
    stream = DecodeStream(path, 500)
    sizes, got = [], []
    for start, block in stream.blocks():
        assert start == sum(sizes)
        sizes.append(block.shape[0])
        got.append(block.copy())
    np.testing.assert_array_equal(np.concatenate(got), whole)
    np.testing.assert_array_equal(stream.audio().samples, whole)
    # The consumers see blocks of block_frames whatever the reads were.
    assert sizes == [500] * 80
    # The spectrogram starts with the first block and should have caught up when the decoder
    # ends: the first read and the last ones stay one block long; those between are longer.
    # (The very last read, past the header's length, checks that the decoder has ended.)
    longer = 500 * streaming._MIDDLE_READ_BLOCKS
    short_tail = reads[-1 - streaming._SHORT_LAST_READS : -1]
    assert reads[0] == 500 and longer in reads and set(short_tail) == {500}
    assert set(reads[1 : reads.index(500, 1)]) == {longer}
    assert sum(reads[:-1]) == 40_000 and len(reads) < 80


def test_iter_blocks_streams_a_long_file(tmp_path: Path) -> None:
    rate = 8000
    path = tmp_path / "long.wav"
    chunk = np.zeros(rate * 60, dtype=np.int16)
    with sf.SoundFile(path, "w", samplerate=rate, channels=1, subtype="PCM_16") as handle:
        for minute in range(20):
            chunk[:] = minute
            handle.write(chunk)
    total_bytes_as_float = 20 * 60 * rate * 4
    tracemalloc.start()
    try:
        frames = 0
        last_start = -1
        for start, block in iter_blocks(path, rate * 5):
            assert start == frames and start > last_start
            frames += block.shape[0]
            last_start = start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert frames == 20 * 60 * rate
    # Streaming holds a few blocks at most, never the 38 MB the whole file would take.
    assert peak < total_bytes_as_float / 20


def test_the_one_media_rule_resolves_inside_a_root(tmp_path: Path) -> None:
    """Media confinement has one rule, workbench.media.clip_audio (the loader has none of its own)."""
    from workbench.media import clip_audio

    root = tmp_path / "media"
    (root / "sub").mkdir(parents=True)
    target = root / "sub" / "a.mp3"
    target.write_bytes(b"x")
    assert clip_audio("k", "sub/a.mp3", [root]).path == target.resolve()
    assert clip_audio("k", str(target), [tmp_path / "other", root]).path == target.resolve()
    assert clip_audio("k", "sub/../sub/a.mp3", [root]).path == target.resolve()


def test_the_one_media_rule_refuses_escapes(tmp_path: Path) -> None:
    from workbench.media import clip_audio

    root = tmp_path / "media"
    root.mkdir()
    escape = clip_audio("k", "../../etc/passwd", [root])
    assert not escape.ok and "outside the media roots" in escape.message and "refused" in escape.message
    assert "refused" in clip_audio("k", "/etc/passwd", [root]).message
    assert "no media root" in clip_audio("k", "a.mp3", []).message
    assert "NUL byte" in clip_audio("k", "a\x00.mp3", [root]).message


def test_the_one_media_rule_refuses_symlinks_out(tmp_path: Path) -> None:
    from workbench.media import clip_audio

    root = tmp_path / "media"
    root.mkdir()
    secret = tmp_path / "secret.wav"
    secret.write_bytes(b"RIFF")
    (root / "link.wav").symlink_to(secret)
    (root / "linkdir").symlink_to(tmp_path)
    for stored in ("link.wav", "linkdir/secret.wav"):
        status = clip_audio("k", stored, [root])
        assert not status.ok and status.path is None and "refused" in status.message


def test_content_hash_matches_hashlib(stereo_wav: Path, tmp_path: Path) -> None:
    assert content_hash(stereo_wav) == hashlib.sha256(stereo_wav.read_bytes()).hexdigest()
    with pytest.raises(AudioError, match="cannot read"):
        content_hash(tmp_path / "gone.wav")


def test_audio_error_is_an_input_error() -> None:
    assert issubclass(AudioError, InputError)


def test_mono_mix_while_reading_equals_mixing_afterwards(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    samples = rng.uniform(-0.5, 0.5, size=(3000, 4)).astype(np.float32)
    path = tmp_path / "foa.wav"
    sf.write(path, samples, 8000, subtype="FLOAT")
    mono = load_audio(path, mono=True)
    assert mono.samples.shape == (3000, 1) and mono.info.n_channels == 4
    np.testing.assert_allclose(mono.samples[:, 0], samples.mean(axis=1), atol=1e-6)


def test_truncated_mp3_with_a_length_header_is_an_error(tmp_path: Path) -> None:
    rate = 16000
    tone = (0.3 * np.sin(2 * np.pi * 440 * np.arange(rate * 6) / rate)).astype(np.float32)
    whole = tmp_path / "whole.mp3"
    sf.write(whole, tone, rate, format="MP3")
    data = whole.read_bytes()
    assert b"Xing" in data[:4096] or b"Info" in data[:4096]
    cut = tmp_path / "cut.mp3"
    cut.write_bytes(data[: len(data) // 3])
    with pytest.raises(AudioError, match=r"cut\.mp3: truncated — header promises 6\.0 s"):
        load_audio(cut)


def test_iter_blocks_stops_where_an_mp3_without_length_header_ends(tmp_path: Path) -> None:
    """An MP3 without a Xing/Info header only estimates its length (here too long).

    SoundFile.blocks sized its blocks by that estimate and yielded stale samples past the real
    end (0.2 s of repeated audio on a real AGL1K clip); the stream must end with the decoder.
    """
    if "MP3" not in sf.available_formats():
        pytest.skip("this libsndfile build cannot write MP3")
    rng = np.random.default_rng(3)
    samples = (rng.standard_normal((44100 * 6, 2)) * 0.1).astype(np.float32)
    with_header = tmp_path / "with_header.mp3"
    sf.write(with_header, samples, 44100, format="MP3")
    data = with_header.read_bytes()
    for tag in (b"Xing", b"Info"):
        data = data.replace(tag, b"\0\0\0\0", 1)
    path = tmp_path / "estimated.mp3"
    path.write_bytes(data)
    with sf.SoundFile(path) as handle:
        decoded = handle.read(dtype="float32", always_2d=True)
    assert sf.info(str(path)).frames > decoded.shape[0]  # the header over-promises
    for overlap in (0, 100):
        starts, blocks = zip(*iter_blocks(path, 20_000, overlap_frames=overlap))
        step = 20_000 - overlap
        streamed = np.concatenate([blocks[0]] + [block[overlap:] for block in blocks[1:]])
        assert streamed.shape == decoded.shape
        np.testing.assert_array_equal(streamed, decoded)
        assert list(starts) == [i * step for i in range(len(blocks))]
