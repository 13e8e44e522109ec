"""`mera-multi evaluate`: run a model on MERA Multi tasks, log, score, package.

With no arguments it runs the built-in tiny random model on the bundled ruHHH-Image
sample (a plumbing check that takes seconds on a CPU). Under ``accelerate launch -m
mera_multi_hf evaluate ...`` every process runs this command on its own shard.
"""

from __future__ import annotations

from dataclasses import dataclass

from mera_multi_hf.core.arguments import Options, opt

EXAMPLES = """examples:
  mera-multi evaluate
      the demo: bundled ruHHH-Image sample, built-in tiny random model (answers are noise)
  mera-multi evaluate --model Qwen/Qwen2.5-VL-7B-Instruct --tasks ruhhh_image --output-dir runs/qwen
  accelerate launch --multi_gpu --num_processes 4 -m mera_multi_hf evaluate --model Qwen/Qwen2.5-VL-7B-Instruct --tasks image
      4 processes, one per GPU; each takes its own share, the main process scores
  mera-multi evaluate --processes 2 --model Qwen/Qwen2.5-VL-7B-Instruct --tasks image
      the same on one machine with 2 GPUs (or 2 CPU processes), without a launcher
  mera-multi evaluate --backend openai --base-url http://127.0.0.1:8000/v1 --model served-name
      a model behind an OpenAI-compatible server (vLLM, TGI, `mera-multi serve`)

A run can be interrupted and rerun with the same command: finished examples are read
back from the sample log (any number of processes), the rest is generated.
"""


DESCRIPTION = (
    "Run a model on MERA Multi tasks. Writes into --output-dir: the sample log "
    "(logs/samples-rank<N>.jsonl while running, samples_<task>_<split>.jsonl at "
    "the end: one JSON line per example; reruns resume from it), results.json, "
    "results.md, results.png, results.html, model-index.yaml (for a Hub model "
    "card; whole official test splits only) and, for the test split, "
    "submission.zip (with logs_public.zip)."
)


@dataclass
class LaunchOptions(Options):
    """How `evaluate` starts: not a RunConfig field, since a Python caller of
    run_evaluation is already inside the one process it runs in."""

    processes: int = opt(
        1,
        "run N processes on this machine, each on its share of the "
        "examples (data parallel; one per GPU), as torchrun would start "
        "them but sooner; the main process scores",
        metavar="N",
        low=1,
        high=1024,
    )
    allow_oversubscribe: bool = opt(
        False,
        "with --processes: allow more processes than the "
        "GPUs (or CPUs) there are (default: refused)",
    )


def options_parser():
    """The options of `evaluate`, one per RunConfig field (its scoring options, shared
    with `score`, in their own group), and LaunchOptions'."""
    from mera_multi_hf.core.arguments import Parser, add_dataclass_options, no_abbreviations
    from mera_multi_hf.generation.config import RunConfig

    parser = Parser(prog="mera-multi evaluate", description=DESCRIPTION, epilog=EXAMPLES)
    add_dataclass_options(parser, RunConfig)
    add_dataclass_options(parser, LaunchOptions)
    no_abbreviations(parser)  # an abbreviated secret option is refused, never recorded
    return parser


def cmd_evaluate(options: list[str]) -> int:
    """`mera-multi evaluate OPTIONS`: parse the options into a RunConfig and run it."""
    values = vars(options_parser().parse_args(options))  # --help stops here, nothing loaded
    from mera_multi_hf.core.masking import masked_logs

    with masked_logs():  # what the run logs, masked (cli.main masks the rest)
        return _run(values, options)


def _run(values: dict, options: list[str]) -> int:
    launch_options = LaunchOptions(values.pop("processes"), values.pop("allow_oversubscribe"))
    processes = launch_options.processes
    if processes != 1:  # (one process: nothing to check or start, no subprocess imported)
        from mera_multi_hf.generation.launch import check_processes, launch, under_launcher

        check_processes(processes, launch_options.allow_oversubscribe)
        if not under_launcher():  # the processes run this same command
            from mera_multi_hf.core.start_up import resume_collections

            resume_collections()
            return launch(processes, options)
    from mera_multi_hf.generation import RunConfig
    from mera_multi_hf.pipeline.evaluate import evaluate

    outcome = evaluate(RunConfig(**values), typed=options)
    if outcome is None:  # not the main process of a data-parallel run
        return 0
    print(outcome.table())
    return 0


def add_parser(sub) -> None:
    # Listed here for `mera-multi --help`; cli.main hands its options to cmd_evaluate,
    # so other commands never import transformers just to build the CLI.
    sub.add_parser(
        "evaluate",
        add_help=False,
        description=DESCRIPTION,
        help="run a model on MERA Multi tasks: sample log, scores, submission "
        "(options: `mera-multi evaluate --help`)",
    )
