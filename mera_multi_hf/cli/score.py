"""`mera-multi score`: its options and the command; the scoring itself is
:func:`mera_multi_hf.pipeline.score.score_predictions`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mera_multi_hf.core.arguments import OVERWRITE_HELP, opt, output_dir_opt
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.scoring.options import ScoringOptions


@dataclass
class ScoreConfig(ScoringOptions):
    """The options of `mera-multi score`; its scoring options are evaluate's."""

    task: str | None = opt(
        None,
        "the task key, e.g. ruhhh_image (one task per scoring)",
        required=True,
        flag="--tasks",
        aliases=("--task",),
    )
    predictions: str | None = opt(None, "JSONL file or folder of them", required=True, path=True)
    data: str | None = opt(
        None,
        "dataset source: raw folder, exported folder, Hub id or "
        "`sample` (default: the official Hub id)",
        path=True,
    )
    split: str = opt("test", "split to score (default: test)")
    out: str | None = output_dir_opt(
        None,
        "output folder for the reports",
        required=True,
    )
    overwrite: bool = opt(False, OVERWRITE_HELP)
    model_name: str | None = opt(
        None,
        "the model that made the predictions, as the results name it (default: what "
        "the files record, else 'unnamed model')",
    )


def cmd_score(config: ScoreConfig) -> int:
    from mera_multi_hf.pipeline.score import score_predictions

    if "," in config.task:
        raise MeraError(
            f"--tasks {config.task!r}: score takes one task at a time (its predictions "
            "are of one task); run it once per task"
        )
    out = Path(config.out)
    result = score_predictions(
        config.task,
        config.predictions,
        out,
        data=config.data,
        split=config.split,
        em_mode=config.em_mode,
        judge=config.judge,
        judge_url=config.judge_url,
        judge_tokenizer=config.judge_tokenizer,
        judge_api_key=config.judge_api_key,
        submission=not config.no_submission,
        model=config.model_name,
        overwrite=config.overwrite,
    )
    print(result["table"])
    return 0


def add_parser(sub) -> None:
    from mera_multi_hf.core.arguments import add_command

    add_command(
        sub,
        "score",
        ScoreConfig,
        cmd_score,
        help="score a predictions file and write results + submission",
        description="Score predictions made elsewhere: this project's sample log, a "
        "JSONL of {id, prediction}, or lm-evaluation-harness "
        "samples_<task>_*.jsonl logs (a file or their folder). Writes into "
        "--output-dir: results.json, results.md, results.png, results.html and, "
        "for the test split, submission.zip (its logs_public.zip holds the "
        "predictions files, without private answers).",
    )
