"""`mera-multi evaluate`: run a model on MERA Multi tasks, log, score, package.

With no arguments it runs the built-in tiny random model on the bundled ruHHH-Image
sample (a plumbing check that takes seconds on a CPU). Under ``accelerate launch -m
mera_multi_hf evaluate ...`` every process runs this command on its own shard.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys

from .errors import MeraError
from .score_cmd import add_scoring_options

EXAMPLES = """examples:
  mera-multi evaluate
      the demo: bundled ruHHH-Image sample, built-in tiny random model (answers are noise)
  mera-multi evaluate --model Qwen/Qwen2.5-VL-7B-Instruct --tasks ruhhh_image --output-dir runs/qwen
  accelerate launch -m mera_multi_hf evaluate --model Qwen/Qwen2.5-VL-7B-Instruct --tasks image
      one process per GPU; each takes its own share, the main process scores
  mera-multi evaluate --backend openai --base-url http://127.0.0.1:8000/v1 --model served-name
      a model behind an OpenAI-compatible server (vLLM, TGI, `python -m mera_multi_hf.runner.serve`)

A run can be interrupted and rerun with the same command: finished examples are read
back from the sample log (any number of processes), the rest is generated.
"""


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _data_arg(values: list[str] | None):
    """--data SOURCE (every task) or --data TASK=SOURCE (repeatable)."""
    if not values:
        return None
    per_task = {}
    for value in values:
        key, sep, source = value.partition("=")
        if sep and "/" not in key and os.sep not in key:
            per_task[key.strip().lower()] = source
        elif len(values) == 1:
            return value
        else:
            raise MeraError(f"--data {value!r}: give one source, or TASK=SOURCE for each task")
    return per_task


def cmd_evaluate(args) -> int:
    from .runner import run_evaluation

    result = run_evaluation(
        model=args.model, tasks=args.tasks, data=_data_arg(args.data), split=args.split,
        limit=args.limit, output_dir=args.output_dir, batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens, backend=args.backend, dtype=args.dtype,
        device=args.device, max_pixels=args.max_pixels, trust_remote_code=args.trust_remote_code,
        revision=args.revision, prompt_mode=args.prompt_mode, base_url=args.base_url,
        api_key=args.api_key, concurrency=args.concurrency, timeout=args.timeout,
        max_retries=args.max_retries, seed=args.seed, em_mode=args.em_mode, judge=args.judge,
        judge_url=args.judge_url, overwrite=args.overwrite, progress=not args.no_progress,
        command=command_of(args))
    if result is None:  # not the main process of a data-parallel run
        return 0
    print(format_results(result))
    return 0


def command_of(args) -> str:
    """The command as typed, rebuilt from the parsed options that differ from the
    defaults (the API key masked): the same whether run directly or under a launcher."""
    parts = ["mera-multi evaluate"]
    for action in _PARSER._actions:
        value = getattr(args, action.dest, None)
        if not action.option_strings or value in (None, False) or value == action.default:
            continue
        flag = action.option_strings[-1]
        if action.dest == "api_key":
            value = "***"
        for item in value if isinstance(value, list) else [value]:
            parts.append(flag if item is True else f"{flag} {shlex.quote(str(item))}")
    return " ".join(parts)


def format_results(result: dict) -> str:
    """The run as a short text table (what the CLI prints)."""
    from .cli import text_table

    run = result["run"]
    lines = [f"model: {run['model']}" + (f"  (revision {run['revision']})" if run["revision"] else "")]
    counts = result["counts"]
    lines.append(f"examples: {counts['requested']}  (from the sample log: {counts['resumed']}, "
                 f"generated now: {counts['generated']})")
    rows = [("task", "split", "n", "metric", "score")]
    for task in result["tasks"]:
        if not task.get("scorable"):
            rows.append((task["task"], task["split"], str(task["n_examples"]), "-",
                         "not scorable (gold hidden)"))
            continue
        for name, value in task["metrics"].items():
            rows.append((task["task"], task["split"], str(task["n_examples"]), name, f"{value:.4f}"))
        for name, value in task.get("unofficial", {}).items():
            rows.append((task["task"], task["split"], str(task["n_examples"]),
                         f"{name} (not official)", f"{value:.4f}"))
        for name in task.get("not_computed", []):
            rows.append((task["task"], task["split"], str(task["n_examples"]), name,
                         "not computed (no --judge/--judge-url)"))
    lines.append(text_table(rows))
    lines += [f"note: {note}" for note in result["notes"]]
    files = result["files"]
    written = [str(files[k]) for k in ("results.json", "results.md", "model-index.yaml")]
    written += [str(p) for p in files["samples"]]
    if "submission" in files:
        written.append(str(files["submission"]))
    lines.append("wrote: " + ", ".join(written))
    return "\n".join(lines)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "evaluate", help="run a model on MERA Multi tasks: sample log, scores, submission",
        description="Run a model on MERA Multi tasks. Writes into --output-dir: the sample "
                    "log (one JSON line per example; reruns resume from it), results.json, "
                    "results.md, model-index.yaml (for a Hub model card) and, for the test "
                    "split, submission.zip.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_argument_group("what to run")
    what.add_argument("--model", help="Hub id or local folder; for --backend openai the served "
                                      "model name (default: the built-in tiny random model, "
                                      "mera-multi-hf/tiny-random-llava: a plumbing check)")
    what.add_argument("--revision", help="model revision (branch, tag or commit) on the Hub")
    what.add_argument("--tasks", default="ruhhh_image",
                      help="comma-separated task keys, a modality (image, audio, video) or "
                           "`all` (default ruhhh_image; see `mera-multi tasks`)")
    what.add_argument("--data", action="append", metavar="SOURCE",
                      help="dataset source: raw MERA folder, exported folder, Hub id or `sample` "
                           "(bundled ruHHH-Image); TASK=SOURCE for one task (repeatable). "
                           "Default: the official Hub copy; with no --model, `sample`")
    what.add_argument("--split", default="test", help="split to run: test (default) or shots")
    what.add_argument("--limit", type=_positive, help="only the first N examples of each task")
    what.add_argument("--output-dir", help="where to write (default runs/<model name>)")
    what.add_argument("--overwrite", action="store_true",
                      help="replace a run with other settings found in --output-dir")

    gen = p.add_argument_group("generation")
    gen.add_argument("--backend", choices=("hf", "openai"), default="hf",
                     help="hf: transformers in this process (default); openai: an "
                          "OpenAI-compatible chat-completions server")
    gen.add_argument("--batch-size", type=_positive, default=8,
                     help="examples per generate call (hf; default 8). Greedy results do not "
                          "depend on it")
    gen.add_argument("--max-new-tokens", type=_positive,
                     help="override every task's answer length (default: per task)")
    gen.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"), default="auto",
                     help="hf weights dtype (default auto: float32 on CPU, the model's own on GPU)")
    gen.add_argument("--device", help="hf device: cpu, cuda, cuda:1, or auto (spread one model "
                                      "over all GPUs). Default: this process's accelerate device")
    gen.add_argument("--max-pixels", type=_positive,
                     help="downscale larger images (keeping the aspect ratio) to at most this "
                          "many pixels before the processor, e.g. 1003520")
    gen.add_argument("--prompt-mode", choices=("auto", "chat", "plain"), default="auto",
                     help="chat: the model's chat template; plain: the prompt as text with the "
                          "image token in place of <image> (auto: chat when there is a template)")
    gen.add_argument("--trust-remote-code", action="store_true",
                     help="allow model code from the Hub repository (only for models you trust)")
    gen.add_argument("--seed", type=int, default=1234, help="random seed (default 1234)")

    api = p.add_argument_group("openai backend")
    api.add_argument("--base-url", help="server URL up to /v1, e.g. http://127.0.0.1:8000/v1")
    api.add_argument("--api-key", default=None,
                     help="API key (default: $OPENAI_API_KEY); never logged")
    api.add_argument("--concurrency", type=_positive, default=8,
                     help="requests in flight at once (default 8)")
    api.add_argument("--timeout", type=float, default=300.0, help="seconds per request (default 300)")
    api.add_argument("--max-retries", type=int, default=4,
                     help="retries of a failed request, with exponential backoff (default 4)")

    add_scoring_options(p.add_argument_group("scoring"))
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_evaluate)
    global _PARSER
    _PARSER = p


_PARSER: argparse.ArgumentParser | None = None


if __name__ == "__main__":
    from .cli import main

    sys.exit(main(["evaluate"] + sys.argv[1:]))
