"""The scoring options, shared by `evaluate` and `score`: each field is one flag
(`mera_multi_hf.core.arguments.add_dataclass_options`) and one keyword of the Python API."""

from __future__ import annotations

from dataclasses import dataclass, fields

from mera_multi_hf.core.arguments import Options, opt
from mera_multi_hf.tasks.declarations import EM_MODES


@dataclass
class ScoringOptions(Options):
    """scoring options (the same for `evaluate` and `score`)"""

    em_mode: str | None = opt(
        None, "exact-match normalisation (default: each task's official mode)", choices=EM_MODES
    )
    judge: str | None = opt(None, "judge model id or folder: also compute judge scores", path=True)
    judge_url: str | None = opt(None, "vLLM-style /classify endpoint of a served judge", url=True)
    judge_tokenizer: str | None = opt(
        None,
        "tokenizer (id or folder) of a served judge, when the server does not report its separator",
        path=True,
    )
    judge_api_key: str | None = opt(
        None,
        "API key of a served judge, sent to --judge-url "
        "(default: $MERA_JUDGE_API_KEY); never recorded",
        secret=True,
    )
    no_submission: bool = opt(False, "do not write submission.zip")

    def scoring(self) -> ScoringOptions:
        """These options alone (what the score stage, :func:`mera_multi_hf.scoring.run_results.score_run`, takes)."""
        return ScoringOptions(**{f.name: getattr(self, f.name) for f in fields(ScoringOptions)})
