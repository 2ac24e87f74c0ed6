"""Player logic through the NullSink: transport, looping, solo/mute mixing; device errors."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from workbench.audio.playback import NullSink, PlaybackError, Player, PlayerState, SounddeviceSink

RATE = 100


def _ramp_stereo(seconds: float = 2.0) -> np.ndarray:
    n = int(seconds * RATE)
    left = np.arange(n, dtype=np.float32) / n
    return np.stack([left, -left], axis=1)


@pytest.fixture
def player() -> Player:
    player = Player(NullSink())
    player.load(_ramp_stereo(), RATE)
    return player


def test_position_advances_only_while_playing(player: Player) -> None:
    sink = player.sink
    assert isinstance(sink, NullSink)
    assert player.state is PlayerState.STOPPED
    assert sink.advance(0.5).shape == (0, 2)
    assert player.position == 0.0
    player.play()
    block = sink.advance(0.5)
    assert player.position == pytest.approx(0.5)
    np.testing.assert_allclose(block[:, 0], np.arange(50) / 200)
    np.testing.assert_allclose(block[:, 1], -np.arange(50) / 200)
    player.pause()
    assert player.state is PlayerState.PAUSED
    sink.advance(1.0)
    assert player.position == pytest.approx(0.5)
    player.play()
    block = sink.advance(0.1)
    assert block[0, 0] == pytest.approx(50 / 200)  # resumes where it paused


def test_seek_jumps_and_clamps(player: Player) -> None:
    player.play()
    player.seek(1.5)
    block = player.sink.advance(0.1)  # type: ignore[attr-defined]
    assert block[0, 0] == pytest.approx(150 / 200)
    assert player.position == pytest.approx(1.6)
    player.seek(-3)
    assert player.position == 0.0
    player.seek(99)
    assert player.position == pytest.approx(2.0)
    with pytest.raises(PlaybackError):
        player.seek(float("nan"))


def test_end_of_clip_stops_and_pads_with_silence(player: Player) -> None:
    player.play()
    player.seek(1.9)
    block = player.sink.advance(0.3)  # type: ignore[attr-defined]
    assert block.shape == (30, 2)
    assert np.all(block[10:] == 0) and block[9, 0] == pytest.approx(199 / 200)
    assert player.state is PlayerState.STOPPED
    assert player.position == pytest.approx(2.0)
    player.play()  # from the start again
    assert player.sink.advance(0.01)[0, 0] == 0.0  # type: ignore[attr-defined]


def test_loop_wraps(player: Player) -> None:
    player.play()
    player.set_loop(0.5, 0.8)
    assert player.position == pytest.approx(0.5)  # moved into the loop
    block = player.sink.advance(1.0)  # type: ignore[attr-defined]
    expected = np.array([(50 + i % 30) / 200 for i in range(100)])
    np.testing.assert_allclose(block[:, 0], expected)
    assert player.state is PlayerState.PLAYING
    assert player.loop == pytest.approx((0.5, 0.8))
    player.clear_loop()
    player.seek(1.95)
    player.sink.advance(0.2)  # type: ignore[attr-defined]
    assert player.state is PlayerState.STOPPED
    with pytest.raises(PlaybackError, match="empty"):
        player.set_loop(1.0, 1.0)


def test_solo_and_mute_change_the_mixed_output(player: Player) -> None:
    sink = player.sink
    player.play()
    player.solo(1)
    block = sink.advance(0.1)  # type: ignore[attr-defined]
    np.testing.assert_allclose(block[:, 0], -np.arange(10) / 200)
    np.testing.assert_allclose(block[:, 1], -np.arange(10) / 200)  # centred in both outputs
    player.solo(None)
    player.mute(0, True)
    block = sink.advance(0.1)  # type: ignore[attr-defined]
    assert np.all(block[:, 0] == 0)
    np.testing.assert_allclose(block[:, 1], -np.arange(10, 20) / 200)
    player.mute(0, False)
    block = sink.advance(0.1)  # type: ignore[attr-defined]
    np.testing.assert_allclose(block[:, 0], np.arange(20, 30) / 200)
    with pytest.raises(PlaybackError, match="channel 5 does not exist"):
        player.solo(5)


def test_mono_and_ambisonic_mixing() -> None:
    player = Player(NullSink())
    player.load(np.full(RATE, 0.5, dtype=np.float32), RATE)
    player.play()
    np.testing.assert_allclose(player.sink.advance(0.1), 0.5)  # type: ignore[attr-defined]
    # ambiX: a plane wave from the left (Y = W) is loud left and silent right.
    w = np.full(RATE, 0.4, dtype=np.float32)
    foa = np.stack([w, w, np.zeros_like(w), np.zeros_like(w)], axis=1)
    player.load(foa, RATE, layout="ambix")
    player.play()
    block = player.sink.advance(0.1)  # type: ignore[attr-defined]
    np.testing.assert_allclose(block[:, 0], 0.4, atol=1e-6)
    np.testing.assert_allclose(block[:, 1], 0.0, atol=1e-6)


def test_bad_input_and_empty_player() -> None:
    player = Player(NullSink())
    assert player.state is PlayerState.EMPTY
    with pytest.raises(PlaybackError, match="no clip loaded"):
        player.play()
    with pytest.raises(PlaybackError):
        player.load(np.zeros((2, 2, 2)), RATE)
    with pytest.raises(PlaybackError):
        player.load(np.zeros((10, 1)), 0)
    player.load(np.array([np.nan, 1.0, np.inf], dtype=np.float32), 3)
    player.play()
    assert np.isfinite(player.sink.advance(1.0)).all()  # type: ignore[attr-defined]


def test_sounddevice_sink_reports_missing_device(monkeypatch: pytest.MonkeyPatch) -> None:
    class PortAudioError(Exception):
        pass

    def no_device(**_kwargs: object) -> None:
        raise PortAudioError("Error querying device -1")

    fake = types.SimpleNamespace(PortAudioError=PortAudioError, OutputStream=no_device)
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    player = Player(SounddeviceSink())
    with pytest.raises(PlaybackError, match="no usable audio output device .*Error querying device -1"):
        player.load(np.zeros((10, 2), dtype=np.float32), 44100)


def test_sounddevice_sink_drives_the_player_callback(monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[object] = []

    class FakeStream:
        def __init__(self, **kwargs: object) -> None:
            self.kwargs = kwargs
            self.active = False
            created.append(self)

        def start(self) -> None:
            self.active = True

        def stop(self) -> None:
            self.active = False

        def close(self) -> None:
            self.active = False

    fake = types.SimpleNamespace(PortAudioError=RuntimeError, OutputStream=FakeStream)
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    player = Player(SounddeviceSink())
    player.load(_ramp_stereo(), RATE)
    player.play()
    stream = created[-1]
    assert stream.active and stream.kwargs["samplerate"] == RATE  # type: ignore[attr-defined]
    out = np.empty((20, 2), dtype=np.float32)
    stream.kwargs["callback"](out, 20, None, None)  # type: ignore[attr-defined]
    np.testing.assert_allclose(out[:, 0], np.arange(20) / 200)
    assert player.position == pytest.approx(0.2)
    player.close()
    assert not stream.active  # type: ignore[attr-defined]
