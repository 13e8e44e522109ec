"""The built-in tiny model: a LLaVA-architecture VLM with random weights.

A plumbing check, not a model: its answers are noise. It exists so that the demo
(`mera-multi evaluate` with no arguments) and the tests run the real loading and
generation path (AutoProcessor, AutoModelForImageTextToText, chat template, image
tokens) offline, in seconds, on a CPU.

It is built at first use into ``<cache_root>/models/`` (about 0.7 MB) from a fixed
recipe and a fixed seed, so every build is the same model. Its weights are nudged so
that it usually answers a lone "A" or "B" (chosen by the input, i.e. at random) and
then stops; the scores it gets are those of a coin, which is the point.

Its audio sibling, a tiny random Qwen2-Audio (Whisper-style log-mel features at 16 kHz,
3-second windows), is built the same way (:func:`tiny_audio_model_path`): the runner
sends audio tasks to it when no model is named. Videos go to the LLaVA as frames.
"""

from __future__ import annotations

import json
from pathlib import Path

from mera_multi_hf.core.outputs import stage_file
from mera_multi_hf.core.provenance import folder_fingerprint

TINY_MODEL_ID = "mera-multi-hf/tiny-random-llava"
RECIPE_VERSION = "2"
# The audio tasks' tiny model (a random Qwen2-Audio): what `--model` None runs them on.
TINY_AUDIO_MODEL_ID = "mera-multi-hf/tiny-random-qwen2-audio"
AUDIO_RECIPE_VERSION = "1"
SEED = 0

# Sizes of the text model; "small" is only for the overhead benchmark (slower generate).
SIZES = {
    "tiny": dict(hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2),
    "small": dict(hidden=256, intermediate=768, layers=4, heads=4, kv_heads=2),
}

# Newlines are written as {{ "\n" }}: Jinja (trim_blocks) drops a newline after a tag.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ '\n' }}"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image>{{ '\n' }}{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{{ '\n' }}{% endif %}"
)

CARD = """---
library_name: transformers
pipeline_tag: image-text-to-text
tags: [mera-multi-hf, random-weights, test-only]
---
# {name} (random weights: a plumbing check)

Built by mera-multi-hf (recipe {recipe}, seed {seed}). A 1-layer CLIP vision tower and a
{layers}-layer Llama text model with random weights and a byte-level BPE tokenizer
trained on a few Russian sentences. **Its answers are noise**: use it to check that a
pipeline runs, never to judge anything.
"""


NOTE = "random weights: a plumbing check, answers are noise"


def tiny_model_path(size: str = "tiny") -> Path:
    """The folder of the built-in model, built on first use (atomically)."""
    return _built(
        f"tiny-random-llava-{size}-r{RECIPE_VERSION}", lambda out: build_tiny_model(out, size=size)
    )


def tiny_audio_model_path() -> Path:
    """The folder of the built-in audio model (a tiny random Qwen2-Audio), built on first use."""
    return _built(f"tiny-random-qwen2-audio-r{AUDIO_RECIPE_VERSION}", build_tiny_audio_model)


def _built(name: str, build) -> Path:
    """``<cache_root>/models/<name>``, made by ``build(folder)`` once (atomically: a
    temporary folder renamed into place; a concurrent build of the same recipe wins)."""
    from mera_multi_hf.core.outputs import cache_folder
    from mera_multi_hf.core.paths import cache_root

    target = cache_root() / "models" / name
    if (target / "config.json").is_file():
        return target
    with cache_folder(target) as work:  # a concurrent build of the same recipe may win
        build(work)
    return target


def tiny_model_revision(path: str | Path) -> str:
    """A content hash of the built folder: the revision recorded in logs and results."""
    return folder_fingerprint(path, read=(".json", ".safetensors", ".jinja", ".md"), length=12)


def _training_texts() -> list[str]:
    from mera_multi_hf.demo.sample_data.ruhhh_image import CATEGORY_CONTEXT, ITEMS, PROMPTS

    texts = [item[3] for item in ITEMS] + [a for item in ITEMS for a in item[4]]
    texts += PROMPTS + list(CATEGORY_CONTEXT.values())
    return texts + ["Ответ: A", "Ответ: B", "A", "B", "C", "D"]


def _tokenizer(texts: list[str] | None = None, media_tokens: dict[str, str] | None = None):
    """A byte-level BPE trained on ``texts``; ``media_tokens`` (attribute -> token) become
    special tokens the processor finds on the tokenizer (``image_token``, ``audio_token``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    media_tokens = media_tokens if media_tokens is not None else {"image_token": "<image>"}
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = [
        "<pad>",
        "<s>",
        "</s>",
        *media_tokens.values(),
        "<|user|>",
        "<|assistant|>",
        "<|system|>",
    ]
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=special,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts if texts is not None else _training_texts(), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        extra_special_tokens=media_tokens,
    )


def _unit_scale_and_letters(model, tokenizer, hidden: int) -> None:
    """Unit-scale weights make the output depend on the input (the default 0.02 init
    gives the same answer to every prompt). "A" and "B" get opposite output rows along a
    random direction v, so the sign of v.h picks one of them; their input embeddings are
    a large vector u, and the EOS row is u: right after a letter the model stops."""
    import torch

    gen = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() >= 2 and "embed" not in name and "lm_head" not in name:
                param.copy_(torch.randn(param.shape, generator=gen) * 2 / param.shape[1] ** 0.5)
        u = torch.randn(hidden, generator=gen)
        u /= u.norm()
        v = torch.randn(hidden, generator=gen)
        v -= (v @ u) * u
        v /= v.norm()
        a, b = tokenizer.convert_tokens_to_ids(["A", "B"])
        model.get_input_embeddings().weight[[a, b]] = 30 * u
        head = model.get_output_embeddings().weight
        head[a], head[b], head[tokenizer.eos_token_id] = 8 * v, -8 * v, 5 * u


def _save(model, processor, out_dir, card: str, info: dict) -> Path:
    import transformers

    out = Path(out_dir)
    transformers.logging.disable_progress_bar()
    try:
        model.save_pretrained(out)
        processor.save_pretrained(out)
    finally:
        transformers.logging.enable_progress_bar()
    stage_file(out, "README.md", card)
    stage_file(out, "mera_multi_tiny.json", json.dumps(info, indent=1))
    return out


def build_tiny_model(out_dir: str | Path, size: str = "tiny") -> Path:
    """Build the model into ``out_dir`` (offline, deterministic) and return the folder."""
    import torch
    from transformers import LlavaForConditionalGeneration

    dims = SIZES[size]
    tokenizer = _tokenizer()
    processor = _llava_processor(tokenizer)
    config = _llava_config(tokenizer, dims)
    torch.manual_seed(SEED)
    model = LlavaForConditionalGeneration(config).eval()
    _unit_scale_and_letters(model, tokenizer, config.text_config.hidden_size)
    card = CARD.format(name=TINY_MODEL_ID, recipe=RECIPE_VERSION, seed=SEED, layers=dims["layers"])
    return _save(
        model,
        processor,
        out_dir,
        card,
        {
            "model_id": TINY_MODEL_ID,
            "recipe": RECIPE_VERSION,
            "seed": SEED,
            "size": size,
            "note": NOTE,
        },
    )


def _llava_processor(tokenizer):
    """The LLaVA processor: 28-pixel images in 14-pixel patches, the chat template."""
    from transformers import CLIPImageProcessorPil, LlavaProcessor

    return LlavaProcessor(
        image_processor=CLIPImageProcessorPil(
            size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}
        ),
        tokenizer=tokenizer,
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
    )


def _llava_config(tokenizer, dims: dict):
    """A 1-layer CLIP vision tower and a Llama text model of the size ``dims``."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig

    return LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=28,
            patch_size=14,
            projection_dim=32,
        ),
        text_config=LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=dims["hidden"],
            intermediate_size=dims["intermediate"],
            num_hidden_layers=dims["layers"],
            num_attention_heads=dims["heads"],
            num_key_value_heads=dims["kv_heads"],
            max_position_embeddings=1024,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            tie_word_embeddings=False,
        ),
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        pad_token_id=tokenizer.pad_token_id,
    )


AUDIO_CHAT_TEMPLATE = CHAT_TEMPLATE.replace(
    "{% if c['type'] == 'image' %}<image>{{ '\n' }}",
    "{% if c['type'] == 'audio' %}<|audio_bos|><|AUDIO|><|audio_eos|>{{ '\n' }}",
)

AUDIO_CARD = """---
library_name: transformers
pipeline_tag: audio-text-to-text
tags: [mera-multi-hf, random-weights, test-only]
---
# {name} (random weights: a plumbing check)

Built by mera-multi-hf (recipe {recipe}, seed {seed}). A Qwen2-Audio architecture: a
1-layer Whisper-style audio encoder over 3-second log-mel windows at 16 kHz and a
2-layer Qwen2 text model with random weights and a byte-level BPE tokenizer trained on a
few Russian sentences. **Its answers are noise**: use it to check that a pipeline runs,
never to judge anything.
"""


def _audio_training_texts() -> list[str]:
    from mera_multi_hf.demo.sample_data.av_common import training_texts

    return training_texts() + ["Ответ: A", "A", "B", "C", "D", '{"intent": "", "slots": []}']


AUDIO_TOKENS = {
    "audio_token": "<|AUDIO|>",
    "audio_bos_token": "<|audio_bos|>",
    "audio_eos_token": "<|audio_eos|>",
}


def build_tiny_audio_model(out_dir: str | Path) -> Path:
    """A tiny random Qwen2-Audio (offline, deterministic) into ``out_dir``."""
    import torch
    from transformers import Qwen2AudioForConditionalGeneration

    tokens = dict(AUDIO_TOKENS)  # one dict: the tokenizer's special tokens, the processor's
    tokenizer = _tokenizer(_audio_training_texts(), tokens)
    processor = _qwen2_audio_processor(tokenizer, tokens)
    config = _qwen2_audio_config(tokenizer)
    torch.manual_seed(SEED)
    model = Qwen2AudioForConditionalGeneration(config).eval()
    _unit_scale_and_letters(model, tokenizer, config.text_config.hidden_size)
    card = AUDIO_CARD.format(name=TINY_AUDIO_MODEL_ID, recipe=AUDIO_RECIPE_VERSION, seed=SEED)
    return _save(
        model,
        processor,
        out_dir,
        card,
        {
            "model_id": TINY_AUDIO_MODEL_ID,
            "recipe": AUDIO_RECIPE_VERSION,
            "seed": SEED,
            "note": NOTE,
        },
    )


def _qwen2_audio_processor(tokenizer, tokens: dict):
    """The Qwen2-Audio processor: Whisper-style log-mel features, the chat template."""
    from transformers import Qwen2AudioProcessor, WhisperFeatureExtractor

    # 3-second windows (300 mel frames): the encoder's input length is fixed by its positions
    extractor = WhisperFeatureExtractor(feature_size=32, sampling_rate=16000, chunk_length=3)
    return Qwen2AudioProcessor(
        feature_extractor=extractor,
        tokenizer=tokenizer,
        chat_template=AUDIO_CHAT_TEMPLATE,
        **tokens,
    )


def _qwen2_audio_config(tokenizer):
    """A 1-layer Whisper-style audio encoder and a 2-layer Qwen2 text model."""
    from transformers import Qwen2AudioConfig, Qwen2AudioEncoderConfig, Qwen2Config

    return Qwen2AudioConfig(
        audio_config=Qwen2AudioEncoderConfig(
            num_mel_bins=32,
            encoder_layers=1,
            encoder_attention_heads=2,
            encoder_ffn_dim=64,
            d_model=32,
            max_source_positions=150,
        ),
        text_config=Qwen2Config(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=1024,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            tie_word_embeddings=False,
        ),
        audio_token_index=tokenizer.convert_tokens_to_ids("<|AUDIO|>"),
        pad_token_id=tokenizer.pad_token_id,
    )


if __name__ == "__main__":
    print(tiny_model_path())


# text-model sizes of the random LLaVA (the vision tower stays the tiny one)
RANDOM_LLAVA_SIZES = {
    "chatty": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2),
    "medium": dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=8),
    "large": dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=12),
}


def build_random_llava(out: Path, size: str | None = "medium", seed: int = 3) -> Path:
    """A LLaVA with the tiny model's processor, vision tower and tokenizer, a text model
    of ``size`` and unit-scale random weights: it writes input-dependent noise, so most
    answers run to the token limit (generation dominates, the worst case for a runner)."""
    import torch
    from transformers import AutoConfig, AutoProcessor, LlavaForConditionalGeneration

    if (out / "config.json").is_file():
        return out
    config = AutoConfig.from_pretrained(tiny_model_path())
    for name, value in RANDOM_LLAVA_SIZES.get(size, {}).items():
        setattr(config.text_config, name, value)
    config.text_config.max_position_embeddings = 4096
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() >= 2:
                param.copy_(torch.randn(param.shape, generator=gen) * 1.5 / param.shape[1] ** 0.5)
    model.save_pretrained(out)
    AutoProcessor.from_pretrained(tiny_model_path()).save_pretrained(out)
    return out
