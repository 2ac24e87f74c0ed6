"""Local Qwen2.5-Omni as AGL1K ran it, and several clips per `generate` call with the answers of one at a time.

Both on a tiny random-weight Qwen2.5-Omni built from a config (tests/storage/test_alm_local.py).
The reference is AGL1K's ``qwen2_5Omni_process`` path: system prompt, then the AUDIO, then the
question; the audio loaded by ``qwen_omni_utils``; ``Qwen2_5OmniProcessor(text=..., audio=...,
padding=True)``; greedy generation with ``max_new_tokens=2048``. Offline here, two things are
bypassed, in this test only: the processor's check that its image and video processors are of the
right classes (the video processor needs torchvision, which is not installed; the audio and text
path never touches them), and ``qwen_omni_utils``' package ``__init__`` (it imports its vision half,
which needs torchvision), by loading its ``audio_process`` module from its file.
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from tests.storage.test_alm_local import TEMPLATE, build_tiny_qwen_omni

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_omni(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen_omni(tmp_path_factory.mktemp("omni") / "tiny-qwen-omni")


def _recording(path: Path, seconds: float, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 44_100)) / 44_100
    stereo = np.stack([0.3 * np.sin(2 * np.pi * (200 + 50 * seed) * t), 0.05 * rng.standard_normal(t.size)], axis=1)
    sf.write(path, stereo.astype(np.float32), 44_100)
    return path


def _request(path: Path, key: str, max_output_tokens: int = 2048) -> Any:
    from workbench.alm.config import ModelEntry
    from workbench.alm.prompts import load_prompt
    from workbench.alm.providers import AlmRequest, read_audio

    return AlmRequest(key=key, prompt=load_prompt("agl1k"), audio=read_audio(path, ("wav",)), api_model="tiny",
                      entry=ModelEntry(provider="transformers", max_output_tokens=max_output_tokens), seed=42)


def _reference_audio_loader() -> Any:
    package = importlib.util.find_spec("qwen_omni_utils")
    if package is None:
        pytest.skip("qwen-omni-utils (extra [local]) is not installed")
    source = Path(package.submodule_search_locations[0]) / "v2_5" / "audio_process.py"
    spec = importlib.util.spec_from_file_location("agl1k_reference_audio_process", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.process_audio_info


def test_inputs_given_to_generate_are_agl1k_processor_inputs(tiny_omni: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from transformers import AutoFeatureExtractor, AutoTokenizer, ProcessorMixin, Qwen2_5OmniProcessor

    from workbench.alm.local import QwenOmni, TransformersProvider

    path = _recording(tmp_path / "clip.wav", 3.3, seed=1)
    request = _request(path, "clip")
    provider = TransformersProvider(str(tiny_omni), device="cpu")
    model = provider._loaded()
    seen: dict[str, Any] = {}

    def generate(**kwargs: Any) -> torch.Tensor:  # records what the real path hands to generate
        seen.update(kwargs)
        return torch.cat([kwargs["input_ids"], torch.tensor([[model.tokenizer.eos_token_id]])], dim=1)

    monkeypatch.setattr(model.model.thinker, "generate", generate)
    reply = provider.ask(request)
    assert reply.output_tokens == 1 and reply.input_tokens == seen["input_ids"].shape[1]

    # AGL1K's path, step by step
    conversation = [{"role": "system", "content": [{"type": "text", "text": QwenOmni.SYSTEM}]},
                    {"role": "user", "content": [{"type": "audio", "audio": str(path)},
                                                 {"type": "text", "text": request.prompt.text}]}]
    audios = _reference_audio_loader()(conversation, use_audio_in_video=False)
    monkeypatch.setattr(ProcessorMixin, "check_argument_for_proper_class", lambda self, name, arg: None)
    processor = Qwen2_5OmniProcessor(image_processor=None, video_processor=None,
                                     feature_extractor=AutoFeatureExtractor.from_pretrained(tiny_omni),
                                     tokenizer=AutoTokenizer.from_pretrained(tiny_omni), chat_template=TEMPLATE)
    text = processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
    assert text.index("<|AUDIO|>") < text.index(request.prompt.text[:40])  # the audio comes before the question
    expected = processor(text=text, audio=audios, images=None, videos=None, return_tensors="pt", padding=True)

    np.testing.assert_array_equal(model.load_audio(path.read_bytes()), audios[0])  # 16 kHz, librosa's mono
    for name in ("input_ids", "attention_mask", "input_features", "feature_attention_mask"):
        assert seen[name].dtype == expected[name].dtype, name
        torch.testing.assert_close(seen[name], expected[name], rtol=0, atol=0, msg=name)
    assert seen["max_new_tokens"] == 2048 and seen["do_sample"] is False  # greedy, AGL1K's budget
    provider.close()


def test_several_clips_per_generate_call_answer_as_one_at_a_time(tiny_omni: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.alm.local import QwenOmni, TransformersProvider

    requests = [_request(_recording(tmp_path / f"c{i}.wav", seconds, seed=i), f"c{i}", max_output_tokens=8)
                for i, seconds in enumerate([2.0, 4.5, 1.2])]
    single = TransformersProvider(str(tiny_omni), device="cpu")
    one_at_a_time = [single.ask(r) for r in requests]

    batched = TransformersProvider(str(tiny_omni), device="cpu", batch_size=3)
    model = batched._loaded()
    sizes: list[int] = []
    original = QwenOmni.answer_batch

    def spy(self: QwenOmni, reqs: list, audios: list, budget: int) -> list:
        sizes.append(len(reqs))
        return original(self, reqs, audios, budget)

    monkeypatch.setattr(QwenOmni, "answer_batch", spy)
    # The first clip runs alone while the other two wait; then they share one call.
    with ThreadPoolExecutor(max_workers=3) as pool:
        replies = list(pool.map(batched.ask, requests))
    assert max(sizes) >= 2 and sum(sizes) == 3
    assert model.tokenizer.padding_side == "left"
    for got, expected in zip(replies, one_at_a_time):
        assert (got.text, got.input_tokens, got.output_tokens) == (expected.text, expected.input_tokens,
                                                                   expected.output_tokens)
    assert len({r.input_tokens for r in replies}) == 3  # the clips differ in length: padding was needed
