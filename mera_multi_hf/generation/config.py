"""Every option of a run, once: the dataclass that Python callers fill and from which
the CLI is generated (`mera-multi evaluate`: one flag per field, as ``--max-new-tokens``).
The scoring options are inherited from :class:`~mera_multi_hf.scoring.options.ScoringOptions`,
which `score` shares, the media limits from ``MediaLimitOptions``, which `build` shares."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.masking import remember_options
from mera_multi_hf.core.outputs import OVERWRITE_HELP
from mera_multi_hf.data.media_checks import MediaLimitOptions
from mera_multi_hf.generation.backends import (
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    BackendChoices,
    backend_spec,
    check_kind,
)
from mera_multi_hf.scoring.options import ScoringOptions
from mera_multi_hf.scoring.options import opt as _opt

# options that hold a number (None allowed), checked so that a wrong type is a sentence
NUMBERS = {
    "limit": int,
    "batch_size": int,
    "max_new_tokens": int,
    "max_pixels": int,
    "max_frames": int,
    "seed": int,
    "dialogue_context": int,
    "concurrency": int,
    "max_retries": int,
    "timeout": (int, float),
}


def check_types(config) -> None:
    """TypeError for an option of the wrong type (RunConfig(limit="5")); MeraError for a
    blank one, as the command line gives it (--data "")."""
    for name, kind in NUMBERS.items():
        value = getattr(config, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
            what = "an integer" if kind is int else "a number of seconds"
            raise TypeError(
                f"RunConfig {name} must be {what}, got {type(value).__name__} {value!r:.40}"
            )
    if not isinstance(config.tasks, (str, list, tuple)):
        raise TypeError(
            "RunConfig tasks must name tasks: a comma-separated string such as "
            f"'ruhhh_image', a list of keys, a modality or 'all' "
            f"(got {config.tasks!r:.40})"
        )
    for name in (
        "tasks",
        "model",
        "output_dir",
        "base_url",
        "revision",
        "judge",
        "judge_url",
        "judge_tokenizer",
        "data",
    ):
        value = getattr(config, name)
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            raise MeraError(
                f"--{name.replace('_', '-')} is empty: give a value or leave the option out"
            )


@dataclass
class RunConfig(ScoringOptions, MediaLimitOptions):
    # the scoring options (em_mode, judge, ..., no_submission) come from ScoringOptions,
    # the media limits (max_image_pixels, ...) from MediaLimitOptions
    # what to run
    model: str | None = _opt(
        None,
        "Hub id or local folder; for --backend openai the served "
        "model name (default: the built-in tiny random model, a plumbing check)",
    )
    revision: str | None = _opt(None, "model revision (branch, tag or commit) on the Hub")
    tasks: str = _opt(
        "ruhhh_image",
        "comma-separated task keys, a modality (image, audio, "
        "video) or `all` (see `mera-multi tasks`)",
    )
    data: list[str] | None = _opt(
        None,
        "dataset source: raw MERA folder, exported folder, Hub "
        "id or `sample`; TASK=SOURCE for one task, repeatable "
        "(default: the official Hub copy; with no --model, `sample`)",
        action="append",
        metavar="SOURCE",
    )
    split: str = _opt("test", "split to run: test or shots")
    limit: int | None = _opt(None, "only the first N examples of each task")
    output_dir: str | None = _opt(None, "where to write (default: runs/<model name>)")
    overwrite: bool = _opt(False, OVERWRITE_HELP)
    # generation
    backend: str = _opt(
        "hf",
        "hf: transformers in this process; openai: an OpenAI-compatible "
        "chat-completions server; or a backend an installed package "
        "adds (entry point group mera_multi_hf.backends)",
        choices=BackendChoices(),
    )
    batch_size: int = _opt(8, "examples per generate call (hf). Greedy answers do not depend on it")
    max_new_tokens: int | None = _opt(None, "override every task's answer length (official: 256)")
    stop: list[str] | None = _opt(
        None,
        'override the stop strings (official: a blank line, "\\n\\n"); repeatable',
        action="append",
    )
    dtype: str = _opt(
        "auto",
        "hf weights dtype (auto: float32 on CPU, the model's own on GPU)",
        choices=("auto", "float32", "bfloat16", "float16"),
    )
    device: str | None = _opt(
        None,
        "hf device: cpu, cuda, cuda:1, or auto (one model over all "
        "GPUs) (default: this process's accelerate device)",
    )
    max_pixels: int | None = _opt(
        None,
        "downscale larger images (aspect kept) to at most this "
        "many pixels before the processor, e.g. 1003520",
    )
    max_frames: int = _opt(
        8,
        "videos: at most this many frames, spread evenly over the video, "
        "reach the model (hf; decoded streaming, so memory does not grow "
        "with the video's length). The openai backend sends the whole file",
    )
    prompt_mode: str = _opt(
        "auto",
        "chat: the model's chat template; plain: the prompt as text "
        "(auto: chat when there is a template)",
        choices=("auto", "chat", "plain"),
    )
    trust_remote_code: bool = _opt(
        False, "allow model code from the Hub repository (only for models you trust)"
    )
    seed: int = _opt(1234, "random seed")
    dialogue_context: int | None = _opt(
        None,
        "dialogue tasks (ruTiE): earlier turns shown with "
        "each question (default: the task's, 5 as the official "
        "README recommends; 0: none)",
    )
    # openai backend
    base_url: str | None = _opt(
        None,
        "server URL up to /v1, e.g. http://127.0.0.1:8000/v1; "
        "several servers (e.g. one vLLM per node): repeat the option or "
        "separate with commas; requests spread over them, and a failing "
        "one's go to the others",
        action="append",
        metavar="URL",
    )
    api_key: str | None = _opt(
        None, "API key (default: $OPENAI_API_KEY); never recorded", secret=True
    )
    concurrency: int = _opt(
        DEFAULT_CONCURRENCY,
        "requests in flight at once per server "
        f"(openai; at most {MAX_CONCURRENCY}); "
        "each answer is logged as it arrives",
    )
    timeout: float = _opt(300.0, "seconds per request (openai)")
    max_retries: int = _opt(4, "retries of a failed request, with exponential backoff (openai)")
    no_progress: bool = _opt(False, "no progress bar")

    def __post_init__(self):
        if isinstance(self.data, (str, Path)):  # Python callers: one source
            self.data = [str(self.data)]
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        if isinstance(self.base_url, (list, tuple)):  # repeated --base-url: one string
            self.base_url = ",".join(self.base_url)
        if self.output_dir is not None:
            self.output_dir = str(self.output_dir)
        if self.data and any(isinstance(d, list) for d in self.data):
            self.data = [
                d for item in self.data for d in (item if isinstance(item, list) else [item])
            ]
        if self.stop and any(isinstance(s, list) for s in self.stop):
            self.stop = [
                s for item in self.stop for s in (item if isinstance(item, list) else [item])
            ]
        check_types(self)
        for name in (
            "batch_size",
            "concurrency",
            "limit",
            "max_new_tokens",
            "max_pixels",
            "max_frames",
        ):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise MeraError(f"--{name.replace('_', '-')} must be at least 1 (got {value})")
        check_kind(self.backend)
        if self.dialogue_context is not None and self.dialogue_context < 0:
            raise MeraError("--dialogue-context must be 0 or more")
        if self.max_retries < 0 or self.timeout <= 0:
            raise MeraError("--max-retries must be >= 0 and --timeout > 0")
        self.limits()  # a bad limit stops here, before any work
        remember_options(self)  # masked wherever text is written or printed from now on

    def limits(self):
        """The media limits of this run: the defaults with the options given replaced."""
        limits = super().limits()
        if (self.max_frames or 0) > limits.max_video_frames:
            raise MeraError(
                f"--max-frames {self.max_frames} is above --max-video-frames "
                f"{limits.max_video_frames}"
            )
        return limits

    def sources(self) -> str | dict | None:
        """--data as given: None, one source for every task, or task -> source."""
        if not self.data:
            return None
        per_task = {}
        for value in self.data:
            key, sep, source = value.partition("=")
            if sep and "/" not in key and os.sep not in key:
                per_task[key.strip().lower()] = source
            elif len(self.data) == 1:
                return value
            else:
                raise MeraError(f"--data {value!r}: give one source, or TASK=SOURCE for each task")
        return per_task

    def openai_key(self) -> str | None:
        """The openai backend's key: --api-key, else $OPENAI_API_KEY."""
        return self.api_key or os.environ.get("OPENAI_API_KEY") or None

    def backend_options(self) -> dict:
        """This run's options for its backend: the fields of that backend's options
        dataclass that this config has too, by name (one mapping for every backend)."""
        taken = backend_spec(self.backend).option_names()
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in taken}

    def environment(self) -> dict:
        """The values this run takes from the environment (named, never shown)."""
        from mera_multi_hf.judge.judges import API_KEY_ENV

        taken = {
            "api_key": ("OPENAI_API_KEY", self.backend == "openai"),
            "judge_api_key": (API_KEY_ENV, bool(self.judge_url)),
        }
        return {
            name: f"from ${env}"
            for name, (env, used) in taken.items()
            if used and getattr(self, name) is None and os.environ.get(env)
        }

    def changed(self) -> dict:
        """The options that differ from the defaults (what the command line said)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) != f.default
        }
