"""The options the ``hf`` backend takes: each declared once, with its default, help and
domain (its own module: hf.py is full). ``make_backend("hf", ...)``, ``HFBackend(model,
**options)`` and `evaluate`'s flags (RunConfig takes these fields as they are declared
here) all check them here."""

from __future__ import annotations

from dataclasses import dataclass

from mera_multi_hf.core.arguments import Options, opt
from mera_multi_hf.core.limits import DEFAULT_VIDEO_FRAMES

DTYPES = ("auto", "float32", "bfloat16", "float16")
DEFAULT_MAX_FRAMES = DEFAULT_VIDEO_FRAMES  # the frames `build` prices a video at
PROMPT_MODES = ("auto", "chat", "plain")


@dataclass
class HFOptions(Options):
    """hf backend options (transformers in this process)"""

    revision: str | None = opt(None, "model revision (branch, tag or commit) on the Hub")
    dtype: str = opt(
        "auto",
        "hf weights dtype (auto: float32 on CPU, the model's own on GPU)",
        choices=DTYPES,
    )
    device: str | None = opt(
        None,
        "hf device: cpu, cuda, cuda:1, or auto (one model over all "
        "GPUs) (default: this process's accelerate device)",
    )
    max_pixels: int | None = opt(
        None,
        "downscale larger images (aspect kept) to at most this "
        "many pixels before the processor, e.g. 1003520",
        low=1,
    )
    trust_remote_code: bool = opt(
        False, "allow model code from the Hub repository (only for models you trust)"
    )
    prompt_mode: str = opt(
        "auto",
        "chat: the model's chat template; plain: the prompt as text "
        "(auto: chat when there is a template)",
        choices=PROMPT_MODES,
    )
    batch_size: int = opt(
        8, "examples per generate call (hf). Greedy answers do not depend on it", low=1
    )
    stop: tuple[str, ...] | list[str] | None = opt(
        None,
        'override the stop strings (official: a blank line, "\\n\\n"); repeatable',
        action="append",
        blank_ok=True,
    )
    max_frames: int | None = opt(
        DEFAULT_MAX_FRAMES,
        "videos: at most this many frames, spread evenly over the video, "
        "reach the model (hf; decoded streaming, so memory does not grow "
        "with the video's length). The openai backend sends the whole file",
        low=1,
    )

    def __post_init__(self):
        if self.max_frames is None:  # a Python caller's None: the default
            self.max_frames = DEFAULT_MAX_FRAMES
        super().__post_init__()
