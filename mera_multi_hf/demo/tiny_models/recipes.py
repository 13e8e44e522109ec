"""The recipes of the tiny random families: each builds a small config of the family's
real model class, its real processor classes (image processor, video processor where it
has one and torchvision imports, feature extractor for audio), a byte-level BPE trained
on the project's sample texts with the family's special tokens, and the chat template of
:mod:`.templates`. Weights are random (seeded); answers are noise."""

from __future__ import annotations

import functools

from mera_multi_hf.demo.tiny_models import templates


@functools.cache  # the recipes' one question about this environment
def has_torchvision() -> bool:
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 (an ImportError, or a torch/torchvision mismatch)
        return False
    return True


def tokenizer(
    specials: list[str], media: dict[str, str], eos: str, pad: str, bos: str | None = None
):
    """A byte-level BPE trained on the sample texts; ``media`` (attribute -> token) become
    named special tokens the processor finds (``image_token``, ``audio_token``...)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from mera_multi_hf.demo.builtin_models import _audio_training_texts, _training_texts

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    every = list(dict.fromkeys([pad, eos, *([bos] if bos else []), *media.values(), *specials]))
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        special_tokens=every,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_training_texts() + _audio_training_texts(), trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=eos,
        pad_token=pad,
        bos_token=bos,
        extra_special_tokens=media,
    )


def _text(tok, **extra) -> dict:
    """The shared tiny text-model sizes and the tokenizer's ids."""
    return {
        **dict(
            vocab_size=len(tok),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=2048,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id,
            tie_word_embeddings=False,
        ),
        **extra,
    }


def _video_processor(name: str, **kwargs):
    """The family's video processor, or None where torchvision does not import
    (transformers' video processors need it): videos then go in as frames."""
    if not has_torchvision():
        return None
    import transformers

    return getattr(transformers, name)(**kwargs)


QWEN_SPECIALS = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>"]
QWEN_MEDIA = {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>"}
# merged patches of 28x28 pixels; at most 4 of them per picture or frame pair
QWEN_PIXELS = dict(
    patch_size=14,
    merge_size=2,
    temporal_patch_size=2,
    size={"shortest_edge": 28 * 28, "longest_edge": 56 * 56},
)
ROPE = {"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 10000.0}


def qwen2_vl(version: str):
    """Qwen2-VL ("2") or Qwen2.5-VL ("2.5")."""
    import transformers as t

    tok = tokenizer(QWEN_SPECIALS, QWEN_MEDIA, eos="<|im_end|>", pad="<|endoftext|>")
    video = _video_processor("Qwen2VLVideoProcessor", **QWEN_PIXELS)
    processor_cls = t.Qwen2VLProcessor if version == "2" else t.Qwen2_5_VLProcessor
    processor = processor_cls(
        image_processor=t.Qwen2VLImageProcessorPil(**QWEN_PIXELS),
        video_processor=video,
        tokenizer=tok,
        chat_template=templates.QWEN2_VL,
    )
    ids = dict(
        image_token_id=processor.image_token_id,
        video_token_id=processor.video_token_id,
        vision_start_token_id=tok.convert_tokens_to_ids("<|vision_start|>"),
    )
    text = _text(tok, rope_parameters=ROPE)
    if version == "2":
        vision = dict(depth=1, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2)
        config = t.Qwen2VLConfig(text_config=text, vision_config=vision, **ids)
        return t.Qwen2VLForConditionalGeneration(config), processor, tok
    vision = dict(
        depth=1,
        hidden_size=32,
        intermediate_size=64,
        num_heads=2,
        out_hidden_size=64,
        window_size=56,
        fullatt_block_indexes=[0],
    )
    config = t.Qwen2_5_VLConfig(text_config=text, vision_config=vision, **ids)
    return t.Qwen2_5_VLForConditionalGeneration(config), processor, tok


def qwen3_vl():
    """Qwen3-VL: 16-pixel patches, deepstack features, no default system turn."""
    import transformers as t

    tok = tokenizer(QWEN_SPECIALS, QWEN_MEDIA, eos="<|im_end|>", pad="<|endoftext|>")
    pixels = dict(
        QWEN_PIXELS, patch_size=16, size={"shortest_edge": 32 * 32, "longest_edge": 64 * 64}
    )
    processor = t.Qwen3VLProcessor(
        image_processor=t.Qwen2VLImageProcessorPil(**pixels),
        video_processor=_video_processor("Qwen3VLVideoProcessor", **pixels),
        tokenizer=tok,
        chat_template=templates.QWEN3_VL,
    )
    text = _text(tok, head_dim=16, rope_parameters=dict(ROPE, mrope_interleaved=True))
    vision = dict(
        depth=1,
        hidden_size=32,
        intermediate_size=64,
        num_heads=2,
        patch_size=16,
        out_hidden_size=64,
        num_position_embeddings=16,
        deepstack_visual_indexes=[0],
    )
    config = t.Qwen3VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=processor.image_token_id,
        video_token_id=processor.video_token_id,
        vision_start_token_id=tok.convert_tokens_to_ids("<|vision_start|>"),
        vision_end_token_id=tok.convert_tokens_to_ids("<|vision_end|>"),
    )
    return t.Qwen3VLForConditionalGeneration(config), processor, tok


def _siglip(**extra) -> dict:
    return dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=28,
        patch_size=14,
        **extra,
    )


def gemma3():
    """Gemma 3: a SigLIP tower pooled to 4 soft tokens per picture, <start_of_image>."""
    import transformers as t

    media = {
        "image_token": "<image_soft_token>",
        "boi_token": "<start_of_image>",
        "eoi_token": "<end_of_image>",
    }
    tok = tokenizer(
        ["<start_of_turn>", "<end_of_turn>"], media, eos="<eos>", pad="<pad>", bos="<bos>"
    )
    processor = t.Gemma3Processor(
        image_processor=t.Gemma3ImageProcessorPil(size={"height": 28, "width": 28}),
        tokenizer=tok,
        image_seq_length=4,
        chat_template=templates.GEMMA3,
    )
    ids = tok.convert_tokens_to_ids
    text = _text(
        tok, head_dim=16, sliding_window=64, eos_token_id=[tok.eos_token_id, ids("<end_of_turn>")]
    )
    config = t.Gemma3Config(
        text_config=text,
        vision_config=_siglip(vision_use_head=False),
        mm_tokens_per_image=4,
        image_token_index=ids("<image_soft_token>"),
        boi_token_index=ids("<start_of_image>"),
        eoi_token_index=ids("<end_of_image>"),
        tie_word_embeddings=False,
    )
    return t.Gemma3ForConditionalGeneration(config), processor, tok


def idefics3():
    """Idefics3: pictures split into 28-pixel tiles plus a global view, one token each."""
    import transformers as t

    specials = [
        "<fake_token_around_image>",
        "<end_of_utterance>",
        "<global-img>",
        "<|begin_of_text|>",
    ]
    tok = tokenizer(specials, {"image_token": "<image>"}, eos="<end_of_utterance>", pad="<pad>")
    processor = t.Idefics3Processor(
        image_processor=t.Idefics3ImageProcessorPil(
            size={"longest_edge": 56}, max_image_size={"longest_edge": 28}
        ),
        tokenizer=tok,
        image_seq_len=1,
        chat_template=templates.IDEFICS3,
    )
    config = t.Idefics3Config(
        vision_config=_siglip(),
        text_config=dict(_text(tok), model_type="llama"),
        scale_factor=2,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        pad_token_id=tok.pad_token_id,
    )
    return t.Idefics3ForConditionalGeneration(config), processor, tok


ONEVISION_GRID = [[28, 28], [28, 56], [56, 28], [56, 56]]


def llava_onevision():
    """LLaVA-OneVision: anyres tiles of a SigLIP tower, a Qwen2 text model."""
    import transformers as t

    media = {"image_token": "<image>", "video_token": "<video>"}
    tok = tokenizer(["<|im_start|>"], media, eos="<|im_end|>", pad="<|endoftext|>")
    processor = t.LlavaOnevisionProcessor(
        image_processor=t.LlavaOnevisionImageProcessorPil(
            size={"height": 28, "width": 28}, image_grid_pinpoints=ONEVISION_GRID
        ),
        video_processor=_video_processor(
            "LlavaOnevisionVideoProcessor", size={"height": 28, "width": 28}
        ),
        tokenizer=tok,
        num_image_tokens=4,
        vision_feature_select_strategy="full",
        chat_template=templates.LLAVA_ONEVISION,
    )
    config = t.LlavaOnevisionConfig(
        vision_config=dict(_siglip(), model_type="siglip_vision_model"),
        text_config=dict(_text(tok), model_type="qwen2"),
        image_token_index=processor.image_token_id,
        video_token_index=processor.video_token_id,
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
        image_grid_pinpoints=ONEVISION_GRID,
    )
    return t.LlavaOnevisionForConditionalGeneration(config), processor, tok


def internvl():
    """InternVL: 28-pixel crops plus a thumbnail, pixel-shuffled to one token each."""
    import transformers as t

    media = {
        "start_image_token": "<img>",
        "end_image_token": "</img>",
        "context_image_token": "<IMG_CONTEXT>",
        "video_token": "<video>",
    }
    tok = tokenizer(["<|im_start|>"], media, eos="<|im_end|>", pad="<|endoftext|>")
    size = {"height": 28, "width": 28}
    processor = t.InternVLProcessor(
        image_processor=t.GotOcr2ImageProcessorPil(size=size, crop_to_patches=True, max_patches=4),
        video_processor=_video_processor("InternVLVideoProcessor", size=size),
        tokenizer=tok,
        image_seq_length=1,
        chat_template=templates.INTERNVL,
    )
    vision = dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=[28, 28],
        patch_size=[14, 14],
    )
    config = t.InternVLConfig(
        vision_config=vision,
        text_config=dict(_text(tok), model_type="qwen2"),
        image_token_id=processor.image_token_id,
        downsample_ratio=0.5,
    )
    return t.InternVLForConditionalGeneration(config), processor, tok


def qwen2_5_omni():
    """Qwen2.5-Omni's thinker (the text-writing part): pictures, videos and audio."""
    import transformers as t

    media = {
        "image_token": "<|IMAGE|>",
        "video_token": "<|VIDEO|>",
        "audio_token": "<|AUDIO|>",
        "vision_bos_token": "<|vision_bos|>",
        "vision_eos_token": "<|vision_eos|>",
        "audio_bos_token": "<|audio_bos|>",
        "audio_eos_token": "<|audio_eos|>",
    }
    tok = tokenizer(["<|im_start|>"], media, eos="<|im_end|>", pad="<|endoftext|>")
    processor = t.Qwen2_5OmniProcessor(
        image_processor=t.Qwen2VLImageProcessorPil(**QWEN_PIXELS),
        video_processor=_video_processor("Qwen2VLVideoProcessor", **QWEN_PIXELS),
        feature_extractor=t.WhisperFeatureExtractor(feature_size=32, sampling_rate=16000),
        tokenizer=tok,
        chat_template=templates.QWEN2_5_OMNI,
    )
    audio = dict(
        num_mel_bins=32,
        encoder_layers=1,
        encoder_attention_heads=2,
        encoder_ffn_dim=64,
        d_model=32,
        output_dim=64,
        n_window=50,
    )
    vision = dict(
        depth=1,
        hidden_size=32,
        intermediate_size=64,
        num_heads=2,
        out_hidden_size=64,
        window_size=56,
        fullatt_block_indexes=[0],
    )
    ids = tok.convert_tokens_to_ids
    config = t.Qwen2_5OmniThinkerConfig(
        audio_config=audio,
        vision_config=vision,
        text_config=_text(tok, rope_parameters=ROPE),
        audio_token_index=ids("<|AUDIO|>"),
        image_token_index=ids("<|IMAGE|>"),
        video_token_index=ids("<|VIDEO|>"),
        vision_start_token_id=ids("<|vision_bos|>"),
        audio_start_token_id=ids("<|audio_bos|>"),
        audio_end_token_id=ids("<|audio_eos|>"),
    )
    return t.Qwen2_5OmniThinkerForConditionalGeneration(config), processor, tok


def phi4_multimodal():
    """Phi-4-multimodal: a SigLIP-style tower on 448-pixel crops and a conformer over 80
    log-mel bins at 16 kHz."""
    import transformers as t

    media = {"image_token": "<|image|>", "audio_token": "<|audio|>"}
    tok = tokenizer(
        ["<|user|>", "<|assistant|>", "<|end|>", "<|system|>"],
        media,
        eos="<|endoftext|>",
        pad="<|pad|>",
    )
    processor = t.Phi4MultimodalProcessor(
        # its processor counts 256 tokens per 448-pixel crop (fixed): the tower keeps 448
        image_processor=t.Phi4MultimodalImageProcessor(dynamic_hd=2),
        audio_processor=t.Phi4MultimodalFeatureExtractor(),
        tokenizer=tok,
        chat_template=templates.PHI4_MULTIMODAL,
    )
    vision = dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=448,
        crop_size=448,
        patch_size=14,
        image_token_id=processor.image_token_id,
    )
    audio = dict(
        hidden_size=32,
        intermediate_size=64,
        num_blocks=1,
        num_attention_heads=2,
        ext_pw_out_channel=32,
        depthwise_separable_out_channel=32,
        nemo_conv_channels=32,
        audio_token_id=processor.audio_token_id,
    )
    text = _text(tok, eos_token_id=[tok.eos_token_id, tok.convert_tokens_to_ids("<|end|>")])
    text.pop("model_type", None)
    config = t.Phi4MultimodalConfig(**text, vision_config=vision, audio_config=audio)
    return t.Phi4MultimodalForCausalLM(config), processor, tok
