"""Chat templates of the tiny families, written from each family's documented prompt
format (the model cards and the families' own docs). tests/test_model_families.py checks
each against its documented turn format.

Newlines are written as {{ '\\n' }} where a tag would otherwise eat them (trim_blocks).
"""

from __future__ import annotations


def _parts(image: str, video: str = "", audio: str = "") -> str:
    """A loop over a message's content: each media part becomes the family's marker."""
    return (
        "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
        "{% for c in m['content'] %}"
        "{% if c['type'] == 'image' %}"
        + image
        + "{% elif c['type'] == 'video' %}"
        + video
        + "{% elif c['type'] == 'audio' %}"
        + audio
        + "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
        "{% endfor %}{% endif %}"
    )


def chatml(
    image: str,
    video: str = "",
    audio: str = "",
    system: str | None = None,
    user_sep: str = "{{ '\\n' }}",
) -> str:
    """ChatML (Qwen, InternVL, LLaVA-OneVision): <|im_start|>role\\n...<|im_end|>\\n;
    ``system``: the default system turn when the conversation has none."""
    default = (
        ""
        if system is None
        else "{% if messages[0]['role'] != 'system' %}<|im_start|>system{{ '\\n' }}"
        + system
        + "<|im_end|>{{ '\\n' }}{% endif %}"
    )
    return (
        default
        + "{% for m in messages %}<|im_start|>{{ m['role'] }}"
        + user_sep
        + _parts(image, video, audio)
        + "<|im_end|>{{ '\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{% endif %}"
    )


VISION = "<|vision_start|><|image_pad|><|vision_end|>"
# Qwen2-VL / Qwen2.5-VL: a default system turn; Qwen3-VL has none
QWEN2_VL = chatml(
    VISION, "<|vision_start|><|video_pad|><|vision_end|>", system="You are a helpful assistant."
)
QWEN3_VL = chatml(VISION, "<|vision_start|><|video_pad|><|vision_end|>")
OMNI_SYSTEM = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable "
    "of perceiving auditory and visual inputs, as well as generating text and speech."
)
QWEN2_5_OMNI = chatml(
    "<|vision_bos|><|IMAGE|><|vision_eos|>",
    "<|vision_bos|><|VIDEO|><|vision_eos|>",
    "<|audio_bos|><|AUDIO|><|audio_eos|>",
    system=OMNI_SYSTEM,
)
# InternVL3 (HF): "<IMG_CONTEXT>\n" per picture, "<video>\n" per video
INTERNVL = chatml("<IMG_CONTEXT>{{ '\\n' }}", "<video>{{ '\\n' }}")
# LLaVA-OneVision (Qwen2 text): "<|im_start|>user <image>\ntext<|im_end|>\n<|im_start|>assistant\n"
LLAVA_ONEVISION = chatml("<image>{{ '\\n' }}", "<video>{{ '\\n' }}", user_sep=" ")

# Gemma 3: <bos><start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n ; a system
# turn is folded into the first user turn; the assistant role is "model"
GEMMA3 = (
    "{{ bos_token }}{% for m in messages %}"
    "<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}{{ '\\n' }}"
    + _parts("<start_of_image>")
    + "<end_of_turn>{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model{{ '\\n' }}{% endif %}"
)

# Idefics3: "<|begin_of_text|>User:<image>text<end_of_utterance>\nAssistant:"
IDEFICS3 = (
    "<|begin_of_text|>{% for m in messages %}{{ m['role'] | capitalize }}:"
    + _parts("<image>")
    + "<end_of_utterance>{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}Assistant:{% endif %}"
)

# Phi-4-multimodal: <|user|><|image|>text<|end|><|assistant|> (transformers' native format)
PHI4_MULTIMODAL = (
    "{% for m in messages %}<|{{ m['role'] }}|>"
    + _parts("<|image|>", "", "<|audio|>")
    + "<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
