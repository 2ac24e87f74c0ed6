"""The transformers provider on a tiny random-weight Qwen2.5-Omni built here from a config (no hub
download): the real loading and generate code produce a stored (meaningless) answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from storage.models import AlmAnswer, AlmRun, Prediction
from tests.storage.alm_project import make_project

pytestmark = pytest.mark.slow

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>",
            "<|IMAGE|>", "<|VIDEO|>", "<|vision_bos|>", "<|vision_eos|>", "[UNK]"]
# Qwen's template for the parts used here: text and an audio placeholder per audio item.
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'text' %}{{ c['text'] }}{% elif c['type'] == 'audio' %}"
    "<|audio_bos|><|AUDIO|><|audio_eos|>{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_qwen_omni(folder: Path) -> Path:
    """A character-level tokenizer, Whisper features and a one-layer Qwen2.5-Omni with random weights."""
    import torch
    from tokenizers import AddedToken, Regex, Tokenizer, models, pre_tokenizers
    from transformers import (PreTrainedTokenizerFast, Qwen2_5OmniConfig, Qwen2_5OmniForConditionalGeneration,
                              WhisperFeatureExtractor)

    folder.mkdir(parents=True, exist_ok=True)
    chars = [chr(c) for c in range(32, 127)] + ["\n"]
    vocab = {token: i for i, token in enumerate(SPECIALS + chars)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    backend.add_special_tokens([AddedToken(s, special=True) for s in SPECIALS])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="[UNK]",
        extra_special_tokens={"audio_token": "<|AUDIO|>", "audio_bos_token": "<|audio_bos|>",
                              "audio_eos_token": "<|audio_eos|>", "image_token": "<|IMAGE|>",
                              "video_token": "<|VIDEO|>", "vision_bos_token": "<|vision_bos|>",
                              "vision_eos_token": "<|vision_eos|>"})
    tokenizer.save_pretrained(folder)
    WhisperFeatureExtractor(feature_size=128).save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(TEMPLATE, encoding="utf-8")
    ids = {s: vocab[s] for s in SPECIALS}
    config = Qwen2_5OmniConfig(enable_audio_output=False, thinker_config=dict(
        audio_config=dict(d_model=32, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=64,
                          output_dim=32, num_mel_bins=128, n_window=100),
        vision_config=dict(depth=1, hidden_size=32, out_hidden_size=32, num_heads=2, intermediate_size=64,
                           fullatt_block_indexes=[0]),
        text_config=dict(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         num_key_value_heads=1, intermediate_size=64, max_position_embeddings=4096,
                         rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [2, 3, 3]}),
        audio_token_index=ids["<|AUDIO|>"], image_token_index=ids["<|IMAGE|>"], video_token_index=ids["<|VIDEO|>"],
        audio_start_token_id=ids["<|audio_bos|>"], audio_end_token_id=ids["<|audio_eos|>"],
        vision_start_token_id=ids["<|vision_bos|>"], vision_end_token_id=ids["<|vision_eos|>"]))
    torch.manual_seed(0)
    Qwen2_5OmniForConditionalGeneration(config).save_pretrained(folder)
    torch.save({}, folder / "spk_dict.pt")  # the class loads speakers even when the talker is off
    return folder


def test_tiny_qwen_omni_answer_is_stored(tmp_path: Path) -> None:
    from workbench.alm.config import AlmConfig, ModelEntry, ProviderSettings
    from workbench.alm.runner import AlmRunOptions, run_alm

    checkpoint = build_tiny_qwen_omni(tmp_path / "tiny-qwen-omni")
    project = make_project(tmp_path, n=2)
    config = AlmConfig(path=tmp_path / "alm.toml",
                       providers={"transformers": ProviderSettings(device="cpu", max_retries=0)},
                       models={str(checkpoint): ModelEntry(provider="transformers", max_output_tokens=6)})
    options = AlmRunOptions(model="tiny-omni", provider="transformers", api_model=str(checkpoint),
                            clip_keys=project.keys[:1])
    report = run_alm(project.store, options, config=config)
    assert report.answered == 1 and not report.failed
    assert report.rejected  # random weights write no location: a stored reject, not 0.0
    with project.store.session() as s:
        answer = s.execute(select(AlmAnswer)).scalars().one()
        prediction = s.execute(select(Prediction).join(AlmRun).where(AlmRun.model == "tiny-omni")).scalars().one()
    assert answer.audio["transport"] == "local" and answer.output_tokens == 6 and answer.input_tokens > 400
    assert answer.raw_output is not None and prediction.model_output == answer.raw_output
    assert prediction.predicted_latitude is None
    assert run_alm(project.store, options, config=config).skipped_cached == 1  # never computed twice
    project.store.dispose()


def test_unknown_local_family_is_one_line(tmp_path: Path) -> None:
    import json

    from workbench.alm.local import TransformersProvider
    from workbench.errors import InputError

    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2"}), encoding="utf-8")
    with pytest.raises(InputError, match="model type 'gpt2' has no local runner yet"):
        TransformersProvider(str(folder))._load()


def test_ray_engine_stores_the_same_answers_as_the_local_engine(tmp_path: Path, ray_instance) -> None:  # type: ignore[no-untyped-def]
    """`alm run --engine ray`: an actor per model copy, the driver stores; answers equal the in-process ones."""
    from workbench.alm.config import AlmConfig, ModelEntry, ProviderSettings
    from workbench.alm.runner import AlmRunOptions, run_alm
    from workbench.errors import InputError
    from workbench.pool.alm import RayAlm

    checkpoint = build_tiny_qwen_omni(tmp_path / "tiny-qwen-omni")
    project = make_project(tmp_path, n=3)
    config = AlmConfig(path=tmp_path / "alm.toml",
                       providers={"transformers": ProviderSettings(device="cpu", max_retries=0)},
                       models={str(checkpoint): ModelEntry(provider="transformers", max_output_tokens=6)})

    def answers(model: str) -> dict[str, tuple]:
        with project.store.session() as s:
            rows = s.execute(select(AlmAnswer).join(AlmRun, AlmAnswer.alm_run_id == AlmRun.id)
                             .where(AlmRun.model == model)).scalars().all()
        assert len({(r.clip_key, r.sample) for r in rows}) == len(rows), "no answer stored twice"
        return {r.clip_key: (r.status, r.raw_output, r.input_tokens, r.output_tokens) for r in rows}

    local = run_alm(project.store, AlmRunOptions(model="omni-local", provider="transformers", api_model=str(checkpoint)),
                    config=config)
    distributed = run_alm(project.store, AlmRunOptions(model="omni-ray", provider="transformers", api_model=str(checkpoint),
                                                       concurrency=2), config=config, remote=RayAlm(workers=2))
    assert local.answered == distributed.answered == 3
    assert answers("omni-local") == answers("omni-ray")
    again = run_alm(project.store, AlmRunOptions(model="omni-ray", provider="transformers", api_model=str(checkpoint)),
                    config=config, remote=RayAlm())
    assert again.skipped_cached == 3 and again.answered == 0
    with pytest.raises(InputError, match="--engine ray runs local models"):
        run_alm(project.store, AlmRunOptions(model="x", provider="gemini"), config=config, remote=RayAlm())
    project.store.dispose()
