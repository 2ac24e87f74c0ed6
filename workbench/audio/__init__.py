"""Audio engine: loading, layout detection, quality metrics, spectrogram/waveform pyramids,
playback, downloading recordings, and the services that store analysis results."""
