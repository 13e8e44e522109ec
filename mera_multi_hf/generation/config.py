"""Every option of a run, once: the dataclass that Python callers fill and from which
the CLI is generated (`mera-multi evaluate`: one flag per field, as ``--max-new-tokens``).
The scoring options are inherited from :class:`~mera_multi_hf.scoring.options.ScoringOptions`,
which `score` shares, the media limits from ``MediaLimitOptions``, which `build` shares."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from mera_multi_hf.core.arguments import (
    OVERWRITE_HELP,
    check_options,
    opt,
    output_dir_opt,
    same_as,
)
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.masking import remember_options
from mera_multi_hf.data.media_checks import MediaLimitOptions
from mera_multi_hf.generation.backends import BackendChoices, backend_spec, check_kind
from mera_multi_hf.generation.backends.hf_options import HFOptions
from mera_multi_hf.generation.backends.openai_options import OpenAIOptions
from mera_multi_hf.scoring.options import ScoringOptions

LIMIT_HINT = (
    "a whole number of examples per task (lm-eval's fraction of a split, --limit 0.1, "
    "is not taken here: `mera-multi tasks` shows each test split's size)"
)


def check_tasks(config) -> None:
    """TypeError for tasks that name nothing (RunConfig(tasks=None))."""
    if not isinstance(config.tasks, (str, list, tuple)):
        raise TypeError(
            "RunConfig tasks must name tasks: a comma-separated string such as "
            f"'ruhhh_image', a list of keys, a modality or 'all' "
            f"(got {config.tasks!r:.40})"
        )


@dataclass
class RunConfig(ScoringOptions, MediaLimitOptions):
    """Every option of a run. The backends' options (dtype, batch_size, timeout, seed,
    ...) are declared once, in HFOptions and OpenAIOptions, and taken from there."""

    # the scoring options (em_mode, judge, ..., no_submission) come from ScoringOptions,
    # the media limits (max_image_pixels, ...) from MediaLimitOptions
    # what to run
    model: str | None = opt(
        None,
        "Hub id or local folder; for --backend openai the served "
        "model name (default: the built-in tiny random model, a plumbing check)",
        path=True,
    )
    revision: str | None = same_as(HFOptions, "revision")
    tasks: str = opt(
        "ruhhh_image",
        "comma-separated task keys, a modality (image, audio, "
        "video) or `all` (see `mera-multi tasks`)",
        hidden=("--task",),
    )
    data: list[str] | None = opt(
        None,
        "dataset source: raw MERA folder, exported folder, Hub "
        "id or `sample`; TASK=SOURCE for one task, repeatable "
        "(default: the official Hub copy; with no --model, `sample`)",
        action="append",
        metavar="SOURCE",
        path=True,
    )
    split: str = opt("test", "split to run: test or shots")
    limit: int | None = opt(
        None, "only the first N examples of each task", low=1, metavar="N", hint=LIMIT_HINT
    )
    output_dir: str | None = output_dir_opt(None, "where to write (default: runs/<model name>)")
    overwrite: bool = opt(False, OVERWRITE_HELP)
    # generation
    backend: str = opt(
        "hf",
        "hf: transformers in this process; openai: an OpenAI-compatible "
        "chat-completions server; or a backend an installed package "
        "adds (entry point group mera_multi_hf.backends)",
        choices=BackendChoices(),
    )
    batch_size: int = same_as(HFOptions, "batch_size")
    max_new_tokens: int | None = opt(
        None, "override every task's answer length (official: 256)", low=1
    )
    stop: list[str] | None = same_as(HFOptions, "stop")
    dtype: str = same_as(HFOptions, "dtype")
    device: str | None = same_as(HFOptions, "device")
    max_pixels: int | None = same_as(HFOptions, "max_pixels")
    max_frames: int = same_as(HFOptions, "max_frames")
    prompt_mode: str = same_as(HFOptions, "prompt_mode")
    trust_remote_code: bool = same_as(HFOptions, "trust_remote_code")
    seed: int = same_as(OpenAIOptions, "seed")
    dialogue_context: int | None = opt(
        None,
        "dialogue tasks (ruTiE): earlier turns shown with "
        "each question (default: the task's, 5 as the official "
        "README recommends; 0: none)",
        low=0,
    )
    # openai backend
    base_url: str | None = same_as(OpenAIOptions, "base_url")
    api_key: str | None = same_as(OpenAIOptions, "api_key")
    concurrency: int = same_as(OpenAIOptions, "concurrency")
    timeout: float = same_as(OpenAIOptions, "timeout")
    max_retries: int = same_as(OpenAIOptions, "max_retries")
    no_progress: bool = opt(False, "no progress bar")

    def __post_init__(self):
        if isinstance(self.data, (str, os.PathLike)):  # Python callers: one source
            self.data = [os.fspath(self.data)]
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        if isinstance(self.base_url, (list, tuple)):  # repeated --base-url: one string
            self.base_url = ",".join(self.base_url)
        if self.output_dir is not None:
            self.output_dir = str(self.output_dir)
        self.data, self.stop = _flat(self.data), _flat(self.stop)
        check_tasks(self)
        check_options(self)  # every field's type and domain, as the parser's are
        check_kind(self.backend)
        self.sources()  # an empty TASK= source stops here
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
                if not source.strip():
                    raise MeraError(f"--data {value!r}: give a source after the =")
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


def _flat(values):
    """A list option as one list (a Python caller's nested lists flattened)."""
    if not values or not any(isinstance(v, list) for v in values):
        return values
    return [v for item in values for v in (item if isinstance(item, list) else [item])]
