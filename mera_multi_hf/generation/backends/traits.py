"""What the ``hf`` backend must know about a model family, as data: one entry per
processor class. The backend has no other family knowledge (a test greps it for family
names); a processor class missing here takes the generic path, which the results record
with a one-line note (``info()["family"]``).

Fields:
- ``audio_keyword``: the processor argument that takes audio (transformers 5 names it
  ``audio`` for every family verified; older remote-code processors use ``audios``);
- ``audio_attribute``: the processor attribute holding the audio feature extractor;
- ``takes_videos``: videos go to the processor's ``videos=`` when it has a video
  processor; False sends them as frames (pictures) even then;
- ``sampling_rate``: the audio rate, where the feature extractor's own is not the one
  the model was trained at (None: the feature extractor's);
- ``nested_images``: pictures go to the processor as one list per prompt (else one
  flat list in prompt order);
- ``padding_side``: "left" for every decoder-only family (generation continues at the
  right edge);
- ``processor_kwargs``: extra keys for ``processor(...)``;
- ``generation``: extra generation-config keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Traits:
    family: str
    audio_keyword: str = "audio"
    audio_attribute: str = "feature_extractor"
    takes_videos: bool = True
    sampling_rate: int | None = None
    nested_images: bool = False
    padding_side: str = "left"
    processor_kwargs: dict = field(default_factory=dict)
    generation: dict = field(default_factory=dict)


GENERIC = Traits(family="generic")

# keyed by processor class name; verified offline on the tiny models (tiny_models/)
TRAITS = {
    "LlavaProcessor": Traits("LLaVA"),
    "Qwen2AudioProcessor": Traits("Qwen2-Audio"),
    "Qwen2VLProcessor": Traits("Qwen2-VL"),
    "Qwen2_5_VLProcessor": Traits("Qwen2.5-VL"),
    "Qwen3VLProcessor": Traits("Qwen3-VL"),
    "Gemma3Processor": Traits("Gemma 3", nested_images=True),
    "Idefics3Processor": Traits("Idefics3"),
    "SmolVLMProcessor": Traits("SmolVLM"),
    "LlavaOnevisionProcessor": Traits("LLaVA-OneVision"),
    "InternVLProcessor": Traits("InternVL"),
    # the thinker answers in text; audio inside videos is not used (MERA's videos are
    # asked about their pictures, and the audio tasks give audio apart)
    "Qwen2_5OmniProcessor": Traits("Qwen2.5-Omni", processor_kwargs={"use_audio_in_video": False}),
    "Phi4MultimodalProcessor": Traits("Phi-4-multimodal", audio_attribute="audio_processor"),
}


def traits_for(processor) -> tuple[Traits, str | None]:
    """The traits of ``processor``'s family and, for an unknown family, the note saying
    the generic path was taken."""
    name = type(processor).__name__
    if name in TRAITS:
        return TRAITS[name], None
    return GENERIC, f"{name} is not in the family traits table: the generic path was used"
