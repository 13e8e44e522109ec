"""How media reach an ``hf`` model: videos through the processor's own video input or as
their frames in pictures, and why a processor cannot take a kind of input."""

from __future__ import annotations

FRAMES_AS_IMAGES = "frames as images"
VIDEO_PROCESSOR = "video processor"


def video_path(processor, text_only: bool, takes_videos: bool = True) -> str | None:
    """How videos reach the model: the processor's own video input where it has one
    (transformers' video processors need torchvision), else its frames as pictures."""
    if text_only:
        return None
    if takes_videos and getattr(processor, "video_processor", None) is not None:
        return VIDEO_PROCESSOR
    if getattr(processor, "image_processor", None) is not None:
        return FRAMES_AS_IMAGES
    return None


def unsupported_reason(
    processor, kind: str, video_input: str | None, audio_attribute: str = "feature_extractor"
) -> str | None:
    """Why ``processor`` cannot take a ``kind`` input, or None when it can."""
    if kind == "image" and getattr(processor, "image_processor", None) is None:
        return "its processor has no image processor"
    if kind == "audio" and getattr(processor, audio_attribute, None) is None:
        return "its processor has no audio feature extractor"
    if kind == "video" and video_input is None:
        return "its processor has neither a video nor an image processor"
    return None


def videos_as_pictures(messages: list[dict], frames) -> list[dict]:
    """Chat messages with each video part replaced by one picture part per frame."""
    out = []
    for message in messages:
        content = []
        for part in message["content"]:
            count = next(frames) if part.get("type") == "video" else 0
            content += [{"type": "image"}] * count if part.get("type") == "video" else [part]
        out.append({**message, "content": content})
    return out
