"""Option sets that several commands share, as dataclasses: each field is one flag
(`mera_multi_hf.parsing.add_dataclass_options`) and one keyword of the Python API."""
from __future__ import annotations

from dataclasses import dataclass, fields

from .limits import DEFAULT_LIMITS
from .media_checks import MEDIA_LIMIT_HELP, media_limits
from .metric_exact_match import EM_MODES
from .parsing import opt


@dataclass
class ScoringOptions:
    """scoring options (the same for `evaluate` and `score`)"""
    em_mode: str | None = opt(None, "exact-match normalisation (default: each task's official "
                              "mode)", choices=EM_MODES)
    judge: str | None = opt(None, "judge model id or folder: also compute judge scores")
    judge_url: str | None = opt(None, "vLLM-style /classify endpoint of a served judge")
    judge_tokenizer: str | None = opt(None, "tokenizer (id or folder) of a served judge, when "
                                      "the server does not report its separator")
    judge_api_key: str | None = opt(None, "API key of a served judge, sent to --judge-url "
                                    "(default: $MERA_JUDGE_API_KEY); never recorded",
                                    secret=True)
    no_submission: bool = opt(False, "do not write submission.zip")

    def scoring(self) -> ScoringOptions:
        """These options alone (what :func:`mera_multi_hf.finalize.finalize` takes)."""
        return ScoringOptions(**{f.name: getattr(self, f.name) for f in fields(ScoringOptions)})


def _limit(name: str):
    """A media limit's option: its text and default come from the one set of limits."""
    return opt(None, f"{MEDIA_LIMIT_HELP[name]} (default: {getattr(DEFAULT_LIMITS, name)})",
               metavar="N")


@dataclass
class MediaLimitOptions:
    """media limits and the memory budget (checked on each file's header, before decoding)"""
    max_image_pixels: int | None = _limit("max_image_pixels")
    min_audio_rate: int | None = _limit("min_audio_rate")
    max_audio_rate: int | None = _limit("max_audio_rate")
    max_audio_channels: int | None = _limit("max_audio_channels")
    max_audio_seconds: float | None = _limit("max_audio_seconds")
    max_video_seconds: float | None = _limit("max_video_seconds")
    max_video_frames: int | None = _limit("max_video_frames")
    memory_budget: int | None = _limit("memory_budget")
    max_video_scan_frames: int | None = _limit("max_video_scan_frames")

    def limits(self):
        """The default limits with the ones given replaced (a bad one: MeraError)."""
        return media_limits({f.name: getattr(self, f.name) for f in fields(MediaLimitOptions)})
