"""Local ALMs through Hugging Face ``transformers`` (the ``[local]`` extra): greedy, one clip per call.

AGL1K ran its open models (Qwen2.5-Omni, Qwen3-Omni, Kimi-Audio, Phi-4-MM, Gemma-3n, MiniCPM-o,
MiMo-Audio, Audio Flamingo) this way. Each model family has its own classes and input format, so
families are a registry keyed by the checkpoint's ``model_type``: :func:`register_family` adds
one (a class with ``__init__(path, device)`` and ``answer(...)``), and ``--api-model`` names
the checkpoint (a hub id or a local folder). Qwen2.5-Omni comes first.

The Qwen2.5-Omni path follows AGL1K's ``qwen2_5Omni_process`` (message order, audio loading,
processor inputs, greedy decoding; see :class:`QwenOmni`). It builds the inputs from the
tokenizer and the audio feature extractor — the text and audio half of ``Qwen2_5OmniProcessor``,
whose full form also needs torchvision for video; a test checks that they equal the processor's —
and generates text with the thinker, the part of the model that writes text; the talker (speech
output) is never loaded. On CUDA the model runs in bf16.

Each ``generate`` call gets one clip, as AGL1K's reference did (``openllm.py``, bf16): greedy
decoding in bf16 over a left-padded batch is not guaranteed to give the tokens of one clip at a
time. Several clips per call is an opt-in (``aglw alm run --gpu-batch N``), recorded in the run and
in each answer's fingerprint (:func:`workbench.alm.plan.fingerprint`).
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from dataclasses import dataclass
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


def load_like_qwen_omni_utils(data: bytes) -> Any:
    """The recording as ``qwen_omni_utils.process_mm_info`` loads it: ``librosa.load(..., sr=16000)``.

    That is what produced AGL1K's published Qwen2.5-Omni row: librosa's mono mix and its default
    resampler (soxr HQ), float32. The package itself is used when it imports (its vision half
    needs torchvision); otherwise the same call is made here.
    """
    try:
        from qwen_omni_utils import process_audio_info
    except ImportError:
        process_audio_info = None
    if process_audio_info is not None:
        import base64

        url = "data:audio;base64," + base64.b64encode(data).decode("ascii")
        return process_audio_info([{"role": "user", "content": [{"type": "audio", "audio": url}]}],
                                  use_audio_in_video=False)[0]
    import librosa

    try:
        return librosa.load(io.BytesIO(data), sr=SAMPLE_RATE)[0]
    except Exception as exc:  # noqa: BLE001 - any decoder failure is this clip's failure
        raise AnswerError(f"the recording could not be decoded ({type(exc).__name__}: {exc})") from None


class QwenOmni:
    """Qwen2.5-Omni (``Qwen2_5OmniForConditionalGeneration``), text answers from its thinker.

    The message is the one of AGL1K's ``qwen2_5Omni_process`` (the code behind its published
    Qwen2.5-Omni row): the system prompt, then the AUDIO, then the question text (the template's
    whole text, wherever its ``{audio}`` slot is; API models get the text first); the audio loaded
    as ``qwen_omni_utils.process_mm_info`` does; the inputs are those of ``Qwen2_5OmniProcessor``
    called with ``padding=True`` (its text and audio half: the tokenizer, and the feature
    extractor with ``padding="max_length"``, one audio token per encoder frame); greedy
    generation. One clip per ``generate`` call unless the provider is asked for more
    (:meth:`answer_batch`, left padding).
    """

    # Qwen's documented system prompt for the Omni models.
    SYSTEM = ("You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
              "auditory and visual inputs, as well as generating text and speech.")
    def __init__(self, path: str, device: str) -> None:
        import torch
        from transformers import AutoFeatureExtractor, AutoTokenizer, Qwen2_5OmniForConditionalGeneration

        self.device = _device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.tokenizer.padding_side = "left"  # a batch's prompts end where generation starts
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

    def load_audio(self, data: bytes) -> Any:
        return load_like_qwen_omni_utils(data)

    def conversation(self, request: AlmRequest) -> list[dict[str, Any]]:
        """AGL1K's message for this family: system prompt, then the audio, then the question
        (a change here bumps :data:`workbench.alm.plan.LOCAL_MESSAGE_FORMAT`)."""
        return [{"role": "system", "content": [{"type": "text", "text": self.SYSTEM}]},
                {"role": "user", "content": [{"type": "audio", "audio": request.key},
                                             {"type": "text", "text": request.prompt.text}]}]

    def inputs(self, requests: list[AlmRequest], audios: list[Any]) -> dict[str, Any]:
        """What ``Qwen2_5OmniProcessor(text=..., audio=..., padding=True, return_tensors="pt")`` gives."""
        from transformers.models.qwen2_5_omni.processing_qwen2_5_omni import _get_feat_extract_output_lengths

        texts = [self.tokenizer.apply_chat_template(self.conversation(r), chat_template=self.template,
                                                    add_generation_prompt=True, tokenize=False) for r in requests]
        features = self.features(audios, sampling_rate=SAMPLE_RATE, return_attention_mask=True, padding="max_length",
                                 return_tensors="pt")
        feature_mask = features.pop("attention_mask")
        counts = _get_feat_extract_output_lengths(feature_mask.sum(-1)).tolist()
        texts = [text.replace(self.audio_token, self.audio_token * int(n), 1) for text, n in zip(texts, counts)]
        encoded = self.tokenizer(texts, return_tensors="pt", padding=True)
        return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"],
                "input_features": features["input_features"], "feature_attention_mask": feature_mask}

    def answer(self, request: AlmRequest, audio: Any, max_new_tokens: int) -> tuple[str, int, int]:
        return self.answer_batch([request], [audio], max_new_tokens)[0]

    def answer_batch(self, requests: list[AlmRequest], audios: list[Any], max_new_tokens: int) -> list[tuple[str, int, int]]:
        """(reply text, input tokens, output tokens) per clip, from one greedy ``generate`` call."""
        import torch

        inputs = self.inputs(requests, audios)
        if requests[0].seed is not None:
            torch.manual_seed(requests[0].seed)  # greedy: for the record, the reference seeds 42
        with torch.no_grad():
            output = self.model.thinker.generate(
                input_ids=inputs["input_ids"].to(self.device), attention_mask=inputs["attention_mask"].to(self.device),
                input_features=inputs["input_features"].to(self.device, self.model.dtype),
                feature_attention_mask=inputs["feature_attention_mask"].to(self.device),
                max_new_tokens=max_new_tokens, do_sample=False)
        prompt_length = inputs["input_ids"].shape[1]
        stops = _stop_ids(self.model.thinker.generation_config)
        replies = []
        for row in range(len(requests)):
            new_tokens = output[row, prompt_length:].tolist()
            for position, token in enumerate(new_tokens):
                if token in stops:  # a shorter answer of a batch is padded after its end token
                    new_tokens = new_tokens[: position + 1]
                    break
            reply = self.tokenizer.decode(new_tokens, skip_special_tokens=True)
            replies.append((reply, int(inputs["attention_mask"][row].sum()), len(new_tokens)))
        return replies


def _stop_ids(config: Any) -> set[int]:
    eos = getattr(config, "eos_token_id", None)
    return set(eos) if isinstance(eos, (list, tuple)) else ({eos} if eos is not None else set())


register_family("qwen2_5_omni", QwenOmni)


@dataclass(eq=False)
class _Question:
    request: AlmRequest
    audio: Any
    reply: tuple[str, int, int] | None = None
    error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.reply is not None or self.error is not None


class TransformersProvider:
    """Local inference; the model is loaded on the first question (minutes for a 7B model) and kept.

    ``batch_size`` is the clips per ``generate`` call: 1 by default on every device, the way
    AGL1K's reference asked (``--gpu-batch`` of `aglw alm run`). Above 1, questions asked from
    several threads at once (the runner's concurrency) share ``generate`` calls of up to
    ``batch_size`` clips of a family that has ``answer_batch``: whichever asking thread finds the
    model idle runs the questions waiting then, the others wait for their answers. A batch that
    fails is asked again clip by clip, so one bad clip fails alone.
    """

    name = "transformers"
    accepted_formats = ("mp3", "wav", "flac", "ogg", "aiff", "aif", "aac", "m4a", "opus")

    def __init__(self, checkpoint: str, *, device: str = "auto", batch_size: int = 1) -> None:
        try:
            import transformers  # noqa: F401
        except ImportError:
            raise InputError("--provider transformers needs the 'local' extra: pip install 'agl-workbench[local]'") from None
        if batch_size < 1:
            raise InputError(f"batch size must be at least 1, got {batch_size}")
        self.checkpoint = checkpoint
        self.device = device
        self.batch_size = batch_size
        self._model: LocalFamily | None = None
        self._lock = threading.Lock()
        self._turn = threading.Condition()
        self._waiting: list[_Question] = []
        self._running = False

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

    def _loaded(self) -> LocalFamily:
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    def _per_call(self, model: LocalFamily) -> int:
        return self.batch_size if hasattr(model, "answer_batch") else 1

    def ask(self, request: AlmRequest) -> AlmReply:
        model = self._loaded()
        load = getattr(model, "load_audio", None)
        question = _Question(request, load(request.audio.data) if load is not None else decode_mono(request.audio.data))
        with self._turn:
            self._waiting.append(question)
            while not question.done:
                if self._running:
                    self._turn.wait()
                    continue
                batch = self._take(self._per_call(model))
                self._running = True
                self._turn.release()
                try:
                    self._run(model, batch)
                finally:
                    self._turn.acquire()
                    self._running = False
                    self._turn.notify_all()
        if question.error is not None:
            raise question.error
        text, n_in, n_out = question.reply  # type: ignore[misc]
        return AlmReply(text=text, input_tokens=n_in, output_tokens=n_out, finish_reason=None, transport="local")

    def _take(self, limit: int) -> list[_Question]:
        """The oldest waiting questions with the first one's output budget, at most ``limit``."""
        budget = self._waiting[0].request.entry.max_output_tokens
        batch = [q for q in self._waiting if q.request.entry.max_output_tokens == budget][:limit]
        self._waiting = [q for q in self._waiting if q not in batch]
        return batch

    @staticmethod
    def _run(model: LocalFamily, batch: list[_Question]) -> None:
        budget = batch[0].request.entry.max_output_tokens
        if len(batch) > 1:
            try:
                replies = model.answer_batch([q.request for q in batch], [q.audio for q in batch], budget)  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - asked again one by one below, so the culprit fails alone
                replies = None
            if replies is not None:
                for question, reply in zip(batch, replies):
                    question.reply = reply
                return
        for question in batch:
            try:
                question.reply = model.answer(question.request, question.audio, budget)
            except BaseException as exc:  # noqa: BLE001 - raised in the asking thread
                question.error = exc

    def close(self) -> None:
        self._model = None
