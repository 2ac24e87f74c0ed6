"""Local ALMs through Hugging Face ``transformers`` (the ``[local]`` extra): one clip at a time, greedy.

AGL1K ran its open models (Qwen2.5-Omni, Qwen3-Omni, Kimi-Audio, Phi-4-MM, Gemma-3n, MiniCPM-o,
MiMo-Audio, Audio Flamingo) this way. Each model family has its own classes and input format, so
families are a registry keyed by the checkpoint's ``model_type``: :func:`register_family` adds
one (a class with ``__init__(path, device)`` and ``answer(...)``), and ``--api-model`` names
the checkpoint (a hub id or a local folder). Qwen2.5-Omni comes first.

The Qwen2.5-Omni path builds the model's inputs from its tokenizer and audio feature extractor
(the audio half of ``Qwen2_5OmniProcessor``, whose full form also needs torchvision for video)
and generates text with the thinker, the part of the model that writes text; the talker (speech
output) is never loaded.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from typing import Any, Protocol

from workbench.alm.providers import AlmReply, AlmRequest, AnswerError
from workbench.errors import InputError

SAMPLE_RATE = 16_000


class LocalFamily(Protocol):
    """A loaded local model of one family."""

    def answer(self, request: AlmRequest, audio: Any, max_new_tokens: int) -> tuple[str, int, int]:
        """(reply text, input tokens, output tokens) for a mono float32 waveform at 16 kHz."""
        ...


FAMILIES: dict[str, Callable[[str, str], LocalFamily]] = {}


def register_family(model_type: str, factory: Callable[[str, str], LocalFamily]) -> None:
    """Make checkpoints whose ``config.json`` has ``model_type`` runnable (``factory(path, device)``)."""
    FAMILIES[model_type] = factory


def _device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def decode_mono(data: bytes, rate: int = SAMPLE_RATE) -> Any:
    """The recording as mono float32 at ``rate`` Hz (what the audio encoders of these models take)."""
    import numpy as np
    import soundfile

    try:
        samples, source_rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except Exception:  # noqa: BLE001 - formats libsndfile cannot read go through librosa/audioread
        try:
            import librosa

            samples, source_rate = librosa.load(io.BytesIO(data), sr=None, mono=False)
            samples = np.atleast_2d(samples).T
        except Exception as exc:  # noqa: BLE001
            raise AnswerError(f"the recording could not be decoded ({type(exc).__name__}: {exc})") from None
    mono = samples.mean(axis=1).astype("float32")
    if source_rate != rate:
        import librosa

        mono = librosa.resample(mono, orig_sr=source_rate, target_sr=rate).astype("float32")
    return mono


class QwenOmni:
    """Qwen2.5-Omni (``Qwen2_5OmniForConditionalGeneration``), text answers from its thinker."""

    # Qwen's documented system prompt for the Omni models.
    SYSTEM = ("You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
              "auditory and visual inputs, as well as generating text and speech.")

    def __init__(self, path: str, device: str) -> None:
        import torch
        from transformers import AutoFeatureExtractor, AutoTokenizer, Qwen2_5OmniForConditionalGeneration

        self.device = _device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.features = AutoFeatureExtractor.from_pretrained(path)
        self.template = self._chat_template(path)
        model = Qwen2_5OmniForConditionalGeneration.from_pretrained(
            path, enable_audio_output=False, dtype=torch.bfloat16 if self.device.startswith("cuda") else torch.float32)
        self.model = model.to(self.device).eval()
        self.audio_token = getattr(self.tokenizer, "audio_token", None) or "<|AUDIO|>"

    def _chat_template(self, path: str) -> str | None:
        from transformers.utils import cached_file

        for name in ("chat_template.jinja", "chat_template.json"):
            try:
                found = cached_file(path, name, _raise_exceptions_for_missing_entries=False)
            except OSError:
                found = None
            if found:
                from pathlib import Path

                text = Path(found).read_text(encoding="utf-8")
                if name.endswith(".json"):
                    import json

                    text = json.loads(text)["chat_template"]
                return text
        return None  # the tokenizer's own template

    def answer(self, request: AlmRequest, audio: Any, max_new_tokens: int) -> tuple[str, int, int]:
        import torch
        from transformers.models.qwen2_5_omni.processing_qwen2_5_omni import _get_feat_extract_output_lengths

        content: list[dict[str, Any]] = [{"type": "text", "text": request.prompt.before}, {"type": "audio", "audio": "clip"}]
        if request.prompt.after:
            content.append({"type": "text", "text": request.prompt.after})
        conversation = [{"role": "system", "content": [{"type": "text", "text": self.SYSTEM}]},
                        {"role": "user", "content": content}]
        text = self.tokenizer.apply_chat_template(conversation, chat_template=self.template, add_generation_prompt=True,
                                                  tokenize=False)
        # The processor's audio step: padded log-mel features, and one placeholder token per encoder frame.
        features = self.features(audio, sampling_rate=SAMPLE_RATE, return_attention_mask=True, padding="max_length",
                                 return_tensors="pt")
        feature_mask = features.pop("attention_mask")
        n_audio = int(_get_feat_extract_output_lengths(feature_mask.sum(-1))[0])
        text = text.replace(self.audio_token, self.audio_token * n_audio, 1)
        encoded = self.tokenizer(text, return_tensors="pt")
        input_ids = encoded["input_ids"].to(self.device)
        if request.seed is not None:
            torch.manual_seed(request.seed)
        with torch.no_grad():
            output = self.model.thinker.generate(
                input_ids=input_ids, attention_mask=encoded["attention_mask"].to(self.device),
                input_features=features["input_features"].to(self.device, self.model.dtype),
                feature_attention_mask=feature_mask.to(self.device), max_new_tokens=max_new_tokens, do_sample=False)
        new_tokens = output[0, input_ids.shape[1]:]
        reply = self.tokenizer.decode(new_tokens, skip_special_tokens=True)
        return reply, int(input_ids.shape[1]), int(new_tokens.shape[0])


register_family("qwen2_5_omni", QwenOmni)


class TransformersProvider:
    """Local inference; the model is loaded on the first question (minutes for a 7B model) and kept."""

    name = "transformers"
    accepted_formats = ("mp3", "wav", "flac", "ogg", "aiff", "aif", "aac", "m4a", "opus")

    def __init__(self, checkpoint: str, *, device: str = "auto") -> None:
        try:
            import transformers  # noqa: F401
        except ImportError:
            raise InputError("--provider transformers needs the 'local' extra: pip install 'agl-workbench[local]'") from None
        self.checkpoint = checkpoint
        self.device = device
        self._model: LocalFamily | None = None
        self._lock = threading.Lock()

    def _load(self) -> LocalFamily:
        from transformers import AutoConfig

        try:
            model_type = AutoConfig.from_pretrained(self.checkpoint).model_type
        except (OSError, ValueError) as exc:
            raise InputError(f"--api-model {self.checkpoint}: not a transformers checkpoint (folder or hub id) "
                             f"that can be read here ({str(exc).splitlines()[0]})") from None
        factory = FAMILIES.get(model_type)
        if factory is None:
            raise InputError(f"{self.checkpoint}: model type {model_type!r} has no local runner yet (supported: "
                             f"{', '.join(sorted(FAMILIES))}); serve it with vLLM and use --provider openai-compatible")
        return factory(self.checkpoint, self.device)

    def ask(self, request: AlmRequest) -> AlmReply:
        with self._lock:  # one model, one clip at a time
            if self._model is None:
                self._model = self._load()
            audio = decode_mono(request.audio.data)
            text, n_in, n_out = self._model.answer(request, audio, request.entry.max_output_tokens)
        return AlmReply(text=text, input_tokens=n_in, output_tokens=n_out, finish_reason=None, transport="local")

    def close(self) -> None:
        self._model = None
