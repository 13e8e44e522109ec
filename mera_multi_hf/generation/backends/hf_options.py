"""The options the ``hf`` backend takes, with their defaults (its own module: hf.py is
full). ``make_backend("hf", ...)`` and ``HFBackend(model, **options)`` both check them here."""

from __future__ import annotations

from dataclasses import dataclass

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.limits import DEFAULT_VIDEO_FRAMES

DTYPES = ("auto", "float32", "bfloat16", "float16")
DEFAULT_MAX_FRAMES = DEFAULT_VIDEO_FRAMES  # the frames `build` prices a video at
PROMPT_MODES = ("auto", "chat", "plain")


@dataclass
class HFOptions:
    """``revision``: Hub branch, tag or commit; ``dtype``: auto (float32 on CPU, the
    model's own on GPU) or one of DTYPES; ``device``: cpu, cuda, cuda:1, auto (default:
    this process's accelerate device); ``max_pixels``: larger images are downscaled;
    ``prompt_mode``: auto | chat | plain; ``max_frames``: video frames that reach the
    model; ``stop``: the run's stop strings (None: the official "\\n\\n")."""

    revision: str | None = None
    dtype: str = "auto"
    device: str | None = None
    max_pixels: int | None = None
    trust_remote_code: bool = False
    prompt_mode: str = "auto"
    batch_size: int = 8
    stop: tuple[str, ...] | list[str] | None = None
    max_frames: int | None = DEFAULT_MAX_FRAMES

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise MeraError(f"unknown dtype {self.dtype!r}; choose one of {', '.join(DTYPES)}")
        if self.prompt_mode not in PROMPT_MODES:
            raise MeraError(
                f"unknown prompt mode {self.prompt_mode!r}; choose one of {', '.join(PROMPT_MODES)}"
            )
        given, self.max_frames = self.max_frames, self.max_frames or DEFAULT_MAX_FRAMES
        if self.max_frames < 1:
            raise MeraError(f"--max-frames must be at least 1 (got {given})")
