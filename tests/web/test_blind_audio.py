"""Blind audio: the study page's transcode keeps the sound (channels, rate, length) and drops every tag.

On the demo's synthetic clips (mono, stereo, binaural, and an ambiX FOA clip served as its binaural
render) and on the two real AGL1K recordings of ../shared/media, whose file names and ID3 titles
name the place. Also: the cache is hit the second time, a crash leaves no half file, and two
processes transcoding the same clip at once leave one whole file.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from sqlalchemy import select

from storage import open_store
from storage import tables as T
from tests.web.census import find_hidden, hidden_values, id3_texts
from workbench.audio import blind_audio as blind_module
from workbench.audio.blind_audio import MP3, blind_audio, blind_audio_for_clip, warm_cache
from workbench.audio.loader import load_audio
from workbench.errors import InputError
from workbench.tasks import TaskContext

REPO = Path(__file__).resolve().parents[2]
VORBIS_BLOCK = 2048  # the longest Vorbis block: the decoded length may differ by less than one


def vorbis_comments(data: bytes) -> tuple[bytes, list[bytes]]:
    """The vendor string and user comments of an Ogg Vorbis stream's comment packet."""
    at = data.find(b"\x03vorbis")
    assert at > 0, "no Vorbis comment header"
    (vendor_len,) = struct.unpack_from("<I", data, at + 7)
    vendor = data[at + 11:at + 11 + vendor_len]
    position = at + 11 + vendor_len
    (count,) = struct.unpack_from("<I", data, position)
    position += 4
    comments = []
    for _ in range(count):
        (length,) = struct.unpack_from("<I", data, position)
        comments.append(data[position + 4:position + 4 + length])
        position += 4 + length
    return vendor, comments


def _check_transcode(source: Path, out, *, expect_channels: int) -> None:  # type: ignore[no-untyped-def]
    original = load_audio(source)
    assert out.media_type == "audio/ogg"
    data = out.path.read_bytes()
    assert data[:4] == b"OggS" and out.size == len(data)
    info = sf.info(str(out.path))
    assert (info.format, info.subtype) == ("OGG", "VORBIS")
    assert info.channels == out.channels == expect_channels
    assert info.samplerate == out.sample_rate == original.sample_rate
    decoded = load_audio(out.path)  # decodes through the project's loader too
    assert abs(decoded.samples.shape[0] - original.samples.shape[0]) < VORBIS_BLOCK
    assert out.quality == 6 and out.nominal_kbps >= 64  # q6: 71 kb/s at 16 kHz mono, 192 at 44.1 kHz stereo
    if (out.sample_rate, out.channels) == (44100, 2):
        assert out.nominal_kbps == 192
    vendor, comments = vorbis_comments(data)
    assert comments == [] and vendor.startswith(b"Xiph.Org libVorbis")
    assert b"ENCODER" not in data and b"libsndfile" not in data
    for text in (source.name, source.stem):
        assert not find_hidden(data, {text: "file name"})


def _check_mp3(source: Path, out, *, expect_channels: int, hidden: dict) -> None:  # type: ignore[no-untyped-def]
    """The fallback for browsers without Ogg: an MP3 of the same recording, no tag but LAME's own frame."""
    original = load_audio(source)
    assert out.media_type == "audio/mpeg" and out.path.suffix == ".mp3"
    data = out.path.read_bytes()
    assert data[:3] != b"ID3" and b"TIT2" not in data and b"TPE1" not in data  # no ID3 tag at either end
    assert data[-128:-125] != b"TAG"
    info = sf.info(str(out.path))
    assert (info.format, info.subtype) == ("MP3", "MPEG_LAYER_III")
    assert info.channels == out.channels == expect_channels
    assert info.samplerate == out.sample_rate == original.sample_rate  # every rate here is one MP3 has
    decoded = load_audio(out.path)
    assert abs(decoded.samples.shape[0] / decoded.sample_rate - original.samples.shape[0] / original.sample_rate) < 0.1
    # the best VBR setting, not a thin default (at 16 kHz mono MPEG-2 needs far fewer bits)
    assert out.bitrate_kbps > (75 if out.sample_rate >= 32_000 else 32) * expect_channels
    assert not find_hidden(data, hidden)


@pytest.fixture
def demo(tmp_path: Path):  # type: ignore[no-untyped-def]
    from workbench.demo import create_demo_project

    db = create_demo_project(tmp_path / "demo").db_path
    store = open_store(db)
    yield store
    store.dispose()


def _clips(store) -> list:  # type: ignore[no-untyped-def]
    c = T.clip.c
    with store.read() as connection:
        return connection.execute(select(c.id, c.key, c.layout, c.n_channels).order_by(c.id)).all()


def test_demo_clips_keep_channels_and_rate_and_the_ambix_clip_is_served_binaural(demo, tmp_path: Path) -> None:
    from workbench.media import audio_statuses

    cache = tmp_path / "cache"
    clips = _clips(demo)
    assert {clip.layout for clip in clips} >= {"mono", "stereo", "binaural", "ambix"}
    statuses = audio_statuses(demo)
    hidden = hidden_values(demo, [clip.key for clip in clips], [statuses[clip.id].path for clip in clips])
    for clip in clips:
        out = blind_audio_for_clip(demo, clip.id, cache)
        foa = clip.layout == "ambix"
        _check_transcode(statuses[clip.id].path, out, expect_channels=2 if foa else clip.n_channels)
        assert out.rendered_binaural is foa
        assert not find_hidden(out.path.read_bytes(), hidden)
        assert out.path.parent == cache
        mp3 = blind_audio_for_clip(demo, clip.id, cache, MP3)
        _check_mp3(statuses[clip.id].path, mp3, expect_channels=2 if foa else clip.n_channels, hidden=hidden)
        assert mp3.rendered_binaural is foa and mp3.path != out.path
    # the binaural render differs between the ears (the FOA scene's direction is kept as a cue)
    ambix = next(clip for clip in clips if clip.layout == "ambix")
    rendered, _ = sf.read(str(blind_audio_for_clip(demo, ambix.id, cache).path))
    assert np.std(rendered[:, 0] - rendered[:, 1]) > 1e-3


def test_the_real_recordings_lose_their_id3_text_and_file_names(shared_dir: Path, tmp_path: Path) -> None:
    recordings = sorted((shared_dir / "media").glob("*.mp3"))
    if not recordings:
        pytest.skip(f"{shared_dir / 'media'} holds no MP3 recording")
    for source in recordings:
        texts = id3_texts(source)
        assert texts, f"{source.name}: expected ID3 text frames (the point of this test)"
        out = blind_audio(source, tmp_path / "cache", layout=None)
        _check_transcode(source, out, expect_channels=sf.info(str(source)).channels)
        data = out.path.read_bytes()
        hidden = {text: f"ID3 tag of {source.name}" for text in texts}
        hidden.update({source.name: "file name", source.stem: "file name"})
        assert not find_hidden(data, hidden)
        # stereo kept as it was: the channels still differ (a cue the transcode must not erase)
        decoded, _ = sf.read(str(out.path))
        original = load_audio(source).samples
        assert np.std(decoded[:, 0] - decoded[:, 1]) == pytest.approx(
            float(np.std(original[:, 0] - original[:, 1])), rel=0.2)
        mp3 = blind_audio(source, tmp_path / "cache", layout=None, audio_format=MP3)
        _check_mp3(source, mp3, expect_channels=sf.info(str(source)).channels, hidden=hidden)
        decoded, _ = sf.read(str(mp3.path))
        assert np.std(decoded[:, 0] - decoded[:, 1]) == pytest.approx(
            float(np.std(original[:, 0] - original[:, 1])), rel=0.2)


def test_an_mp3_takes_a_rate_mp3_has(tmp_path: Path) -> None:
    """A 96 kHz recording keeps its rate in Ogg; its MP3 fallback is resampled to 48 kHz (MP3's highest)."""
    source = tmp_path / "high.wav"
    t = np.arange(96_000) / 96_000
    sf.write(str(source), np.column_stack([np.sin(2 * np.pi * 440 * t), 0.5 * np.sin(2 * np.pi * 440 * t)]) * 0.5,
             96_000)
    assert blind_audio(source, tmp_path / "cache", layout=None).sample_rate == 96_000
    mp3 = blind_audio(source, tmp_path / "cache", layout=None, audio_format=MP3)
    assert mp3.sample_rate == 48_000 and mp3.channels == 2
    assert abs(mp3.duration_s - 1.0) < 0.1


def test_a_second_call_is_a_cache_hit_without_a_new_transcode(demo, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = blind_module._transcode
    monkeypatch.setattr(blind_module, "_transcode", lambda *a: (calls.append(a), real(*a))[1])
    clip = _clips(demo)[1]
    first = blind_audio_for_clip(demo, clip.id, tmp_path / "cache")
    mtime = first.path.stat().st_mtime_ns
    second = blind_audio_for_clip(demo, clip.id, tmp_path / "cache")
    assert len(calls) == 1
    assert second.path == first.path and second.sha256 == first.sha256
    assert second.path.stat().st_mtime_ns == mtime
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [first.path.name]


def test_a_crash_while_writing_leaves_no_file_and_the_next_call_makes_a_whole_one(
        demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clip = _clips(demo)[0]
    cache = tmp_path / "cache"
    real_write = sf.SoundFile.write

    def crash(self, data):  # type: ignore[no-untyped-def]
        real_write(self, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sf.SoundFile, "write", crash)
    with pytest.raises(InputError, match="cannot write the audio cache"):
        blind_audio_for_clip(demo, clip.id, cache)
    assert list(cache.iterdir()) == []  # neither a half file under the cache name nor a staging file
    monkeypatch.setattr(sf.SoundFile, "write", real_write)
    out = blind_audio_for_clip(demo, clip.id, cache)
    assert sf.info(str(out.path)).frames == load_audio(out.path).samples.shape[0] > 0


def test_two_processes_transcoding_one_clip_at_once_leave_one_whole_file(demo, tmp_path: Path) -> None:
    clip = _clips(demo)[2]
    cache = tmp_path / "cache"
    script = (
        "import sys; from pathlib import Path; from storage import open_store;"
        "from workbench.audio.blind_audio import blind_audio_for_clip;"
        "s = open_store(Path(sys.argv[1])); b = blind_audio_for_clip(s, int(sys.argv[2]), Path(sys.argv[3]));"
        "print(b.path.name, b.sha256)"
    )
    db = str(tmp_path / "demo" / "demo.sqlite")
    processes = [subprocess.Popen([sys.executable, "-c", script, db, str(clip.id), str(cache)], cwd=REPO,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [p.communicate(timeout=300) for p in processes]
    assert all(p.returncode == 0 for p in processes), [err[-800:] for _, err in outputs]
    answers = {out.strip() for out, _ in outputs}
    assert len(answers) == 1  # every process names the same file with the same bytes
    files = list(cache.iterdir())
    assert len(files) == 1 and not files[0].name.startswith(".partial-")
    assert load_audio(files[0]).samples.shape[0] > 0


def test_warm_cache_reports_each_clip_and_names_the_one_without_audio(demo, tmp_path: Path) -> None:
    from workbench.media import audio_statuses

    clips = _clips(demo)
    statuses = audio_statuses(demo)
    statuses[clips[0].id].path.unlink()
    task = TaskContext()
    out = warm_cache(demo, [clip.id for clip in clips], tmp_path / "cache", task)
    assert sorted(out) == [clip.id for clip in clips[1:]]
    assert (task.done, task.total, task.succeeded) == (len(clips), len(clips), len(clips) - 1)
    assert [f.key for f in task.failures] == [str(clips[0].id)]
    assert "recording not found" in task.failures[0].error
    # both formats the page offers are warmed: a Safari listener's first byte comes from the cache too
    cache = tmp_path / "cache"
    assert len(list(cache.glob("*.ogg"))) == len(list(cache.glob("*.mp3"))) == len(clips) - 1


def test_an_unknown_clip_is_one_line(demo, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such clip"):
        blind_audio_for_clip(demo, 99999, tmp_path / "cache")


@pytest.mark.slow
def test_chromium_plays_the_transcode(demo, tmp_path: Path) -> None:
    import base64

    from tests.web.browser import chromium

    clip = next(c for c in _clips(demo) if c.layout == "stereo")
    out = blind_audio_for_clip(demo, clip.id, tmp_path / "cache")
    encoded = base64.b64encode(out.path.read_bytes()).decode("ascii")
    with chromium() as browser:
        page = browser.new_page()
        page.set_content("<html><body></body></html>")
        result = page.evaluate(
            """async (b64) => {
                 const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
                 const audio = new Audio(URL.createObjectURL(new Blob([bytes], {type: 'audio/ogg'})));
                 const duration = await new Promise((ok, bad) => {
                   audio.onloadedmetadata = () => ok(audio.duration); audio.onerror = () => bad('error');
                 });
                 const ctx = new OfflineAudioContext(2, 1, 44100);
                 const buffer = await ctx.decodeAudioData(bytes.buffer.slice(0));
                 return {canPlay: audio.canPlayType('audio/ogg; codecs=vorbis'), duration,
                         channels: buffer.numberOfChannels, decoded: buffer.duration};
               }""", encoded)
    assert result["canPlay"] in ("probably", "maybe")
    assert result["channels"] == 2
    assert result["duration"] == pytest.approx(out.duration_s, abs=0.05)
    assert result["decoded"] == pytest.approx(out.duration_s, abs=0.05)


def test_a_replaced_recording_gets_a_new_transcode_and_a_deleted_one_is_made_again(demo, tmp_path: Path) -> None:
    from workbench.media import audio_statuses

    clip = _clips(demo)[1]
    first = blind_audio_for_clip(demo, clip.id, tmp_path / "cache")
    source = audio_statuses(demo)[clip.id].path
    samples, rate = sf.read(str(source))
    sf.write(str(source), samples[: len(samples) // 2], rate)
    second = blind_audio_for_clip(demo, clip.id, tmp_path / "cache")
    assert second.path != first.path and second.frames < first.frames
    second.path.unlink()
    third = blind_audio_for_clip(demo, clip.id, tmp_path / "cache")
    assert third.path == second.path and third.path.is_file()
