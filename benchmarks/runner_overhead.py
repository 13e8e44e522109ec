"""Runner overhead: `run_evaluation` with the shipped HFBackend against a bare loop,
both under the official generation settings (at most 256 new tokens, stop at "\n\n"
or EOS, the text cut at the first "\n\n").

The bare loop is the least a script must do: for the same batches (same examples,
same order, same batch size) it applies the chat template, calls the processor, calls
`model.generate` with transformers' own `stop_strings=["\n\n"]` (an independent
implementation of the same stop rule) and decodes and cuts; prompts and decoded images
are prepared before its clock starts. The runner does all of it plus reading the
dataset, building and hashing requests, the sample log, scoring, reports and the
submission. Both use the same loaded model; the one-time conversion of the raw folder
to Parquet is done before either clock starts. Rounds are interleaved (runner, bare,
runner, bare, ...) and the median ratio is reported. Goal: <= 1.05.

``--baseline DIR`` runs an older checkout side by side: a second process with DIR's
package (its own Parquet cache, the same raw folder and model) takes its turn in every
round, runner and bare loop as here, so both ratios come from the same minutes of a
shared machine; its answers must equal this checkout's.

    python benchmarks/runner_overhead.py                   # tiny model: short answers
    python benchmarks/runner_overhead.py --model chatty    # random noise, up to 256 tokens
    python benchmarks/runner_overhead.py --model small --n 200
    python benchmarks/runner_overhead.py --model chatty --baseline /path/to/older/checkout
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def make_raw(out: Path, n: int) -> Path:
    """The bundled sample's examples (test + shots) repeated to n test examples."""
    from mera_multi_hf.demo.sample_data import bundled_sample

    src = bundled_sample()
    shutil.copytree(src / "samples", out / "samples")
    prompts = json.loads((src / "raw_dataset_meta.json").read_text(encoding="utf-8"))["prompts"]
    records = []
    for split in ("test", "shots"):
        records += json.loads((src / f"{split}.json").read_text(encoding="utf-8"))["data"]
    data = []
    for i in range(n):
        record = json.loads(json.dumps(records[i % len(records)]))
        if isinstance(record["instruction"], int):
            record["instruction"] = prompts[record["instruction"]]
        record["meta"]["id"] = i
        record["meta"]["group_id"] = i  # each copy is its own group
        data.append(record)
    (out / "test.json").write_text(
        json.dumps({"access": "public", "data": data}, ensure_ascii=False), encoding="utf-8"
    )
    shots = json.loads(json.dumps(data[:4]))
    for k, record in enumerate(shots):  # ids are unique across test and shots
        record["meta"]["id"] = record["meta"]["group_id"] = n + k
    (out / "shots.json").write_text(
        json.dumps({"data": shots}, ensure_ascii=False), encoding="utf-8"
    )
    shutil.copy(src / "raw_dataset_meta.json", out / "raw_dataset_meta.json")
    return out


def bare_loop(
    backend,
    ds,
    prompts: dict[int, str],
    batch_size: int,
    max_new_tokens: int = 256,
    stop: str = "\n\n",
) -> tuple[float, dict[int, str]]:
    """The same batches with nothing around them (see the module docstring)."""
    import torch

    from mera_multi_hf.tasks.prompts import content_parts

    images = {row["meta"]["id"]: row["inputs"]["image"].convert("RGB") for row in ds}
    chats = {
        i: backend.processor.apply_chat_template(
            [{"role": "user", "content": content_parts(p)}],
            add_generation_prompt=True,
            tokenize=False,
        )
        for i, p in prompts.items()
    }
    order = sorted(prompts, key=lambda i: (-len(prompts[i]), i))  # the runner's batching
    tok = backend.tokenizer
    outputs = {}
    t0 = time.perf_counter()
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        enc = backend.processor(
            text=[chats[i] for i in batch],
            images=[images[i] for i in batch],
            padding=True,
            padding_side="left",
            return_tensors="pt",
        )
        with torch.inference_mode():
            out = backend.model.generate(
                **enc,
                do_sample=False,
                max_new_tokens=max_new_tokens,
                stop_strings=[stop],
                tokenizer=tok,
                pad_token_id=tok.pad_token_id,
            )
        texts = tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        outputs.update((i, text.split(stop)[0]) for i, text in zip(batch, texts))
    return time.perf_counter() - t0, outputs


def runner(
    backend, raw: Path, out: Path, batch_size: int
) -> tuple[float, dict[int, str], dict[int, str]]:
    """(seconds, answers, prompts) of one run_evaluation with a loaded HFBackend."""
    from mera_multi_hf.pipeline.evaluate import run_evaluation

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    run_evaluation(
        model=backend.path,
        tasks="ruhhh_image",
        data=[str(raw)],
        output_dir=str(out),
        batch_size=batch_size,
        engine=backend,
        no_progress=True,
    )
    seconds = time.perf_counter() - t0
    records = [
        json.loads(line)
        for line in (out / "samples_ruhhh_image_test.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ]
    return (
        seconds,
        {r["id"]: r["generation"] for r in records},
        {r["id"]: r["prompt"] for r in records},
    )


def model_path(kind: str, work: Path) -> str:
    from mera_multi_hf.demo.builtin_models import build_random_llava, tiny_model_path

    if kind in ("tiny", "small"):
        return str(tiny_model_path(kind))
    return str(build_random_llava(work / kind, kind))


class Side:
    """One checkout's loaded backend: this process's, or (``--baseline``) a worker
    process's with the other checkout's package, driven round by round over its pipes."""

    def __init__(self, name: str, backend=None, worker=None):
        self.name, self.backend, self.worker = name, backend, worker
        self.runs, self.bares, self.answers = [], [], {}

    def round(self, k: int, raw: Path, work: Path, ds, batch_size: int) -> tuple[float, float]:
        if self.worker is None:
            run_s, answers, prompts = runner(
                self.backend, raw, work / f"{self.name}{k}", batch_size
            )
            bare_s, outputs = bare_loop(self.backend, ds, prompts, batch_size)
            same = answers == outputs
        else:
            self.worker.stdin.write(json.dumps({"out": str(work / f"{self.name}{k}")}) + "\n")
            self.worker.stdin.flush()
            reply = json.loads(self.worker.stdout.readline())
            run_s, bare_s, same = reply["run_s"], reply["bare_s"], reply["same"]
            answers = {int(i): a for i, a in reply["answers"].items()}
        assert same, f"{self.name}: the runner and the bare loop disagree"
        self.runs.append(run_s)
        self.bares.append(bare_s)
        self.answers = answers
        return run_s, bare_s


def start_worker(checkout: Path, model: str, raw: Path, cache: Path, batch_size: int):
    """A process running this script's worker loop with ``checkout``'s package."""
    env = dict(os.environ, PYTHONPATH=str(checkout), MERA_MULTI_CACHE=str(cache))
    worker = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--worker",
            str(checkout),
            "--model-path",
            model,
            "--raw",
            str(raw),
            "--batch-size",
            str(batch_size),
        ],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    assert worker.stdout.readline().strip() == "ready", "the baseline worker did not start"
    return worker


def worker_loop(model: str, raw: Path, batch_size: int) -> int:
    """The baseline side: load once, then one round per line read (see Side.round)."""
    from mera_multi_hf.data.loading import load_task
    from mera_multi_hf.generation.backends.hf import HFBackend

    ds = load_task("ruhhh_image", source=raw, split="test")  # its one-time Parquet export
    backend = HFBackend(model, batch_size=batch_size)
    backend.load()
    reply = sys.stdout
    sys.stdout = sys.stderr  # whatever the run prints stays off the pipe
    print("ready", file=reply, flush=True)
    for line in sys.stdin:
        run_s, answers, prompts = runner(backend, raw, Path(json.loads(line)["out"]), batch_size)
        bare_s, outputs = bare_loop(backend, ds, prompts, batch_size)
        done = {"run_s": run_s, "bare_s": bare_s, "same": answers == outputs, "answers": answers}
        print(json.dumps(done), file=reply, flush=True)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--model", choices=("tiny", "small", "chatty", "medium"), default="tiny")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", help="another checkout of this project to run as well")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # the baseline's process
    parser.add_argument("--model-path", help=argparse.SUPPRESS)
    parser.add_argument("--raw", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_loop(args.model_path, Path(args.raw), args.batch_size)

    import torch

    from mera_multi_hf.data.loading import load_task
    from mera_multi_hf.generation.backends.hf import HFBackend

    work = Path(tempfile.mkdtemp(prefix="mera-overhead-"))
    os.environ.setdefault("MERA_MULTI_CACHE", str(work / "cache"))
    sides = []
    try:
        raw = make_raw(work / "raw", args.n)
        ds = load_task("ruhhh_image", source=raw, split="test")  # one-time Parquet export
        path = model_path(args.model, work)
        backend = HFBackend(path, batch_size=args.batch_size)
        backend.load()
        sides.append(Side("now", backend=backend))
        if args.baseline:
            baseline = Path(args.baseline).resolve()
            worker = start_worker(baseline, path, raw, work / "cache-before", args.batch_size)
            sides.append(Side("before", worker=worker))
        for k in range(args.rounds):
            for side in sides if k % 2 == 0 else sides[::-1]:
                run_s, bare_s = side.round(k, raw, work, ds, args.batch_size)
                print(
                    f"round {k} ({side.name}): runner {run_s:.2f} s, bare loop {bare_s:.2f} s, "
                    f"ratio {run_s / bare_s:.3f}",
                    flush=True,
                )
        _report(args, backend, sides, torch.get_num_threads())
    finally:
        for side in sides:
            if side.worker is not None:
                side.worker.stdin.close()
                side.worker.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _report(args, backend, sides: list[Side], threads: int) -> None:
    answers = sides[0].answers
    lengths = sorted(len(a) for a in answers.values())
    print(
        f"model: {args.model} ({backend.model_id}), {args.n} examples, batch size "
        f"{args.batch_size}, torch threads {threads}, {args.rounds} rounds"
    )
    print(
        f"answers identical to the bare loop's; median answer length {lengths[len(lengths) // 2]} chars"
    )
    for side in sides:
        assert side.answers == answers, f"{side.name}'s answers differ from this checkout's"
        ratios = [r / b for r, b in zip(side.runs, side.bares)]
        print(
            f"{side.name}: runner median {statistics.median(side.runs):.2f} s, bare loop median "
            f"{statistics.median(side.bares):.2f} s, ratio runner / bare loop (median): "
            f"{statistics.median(ratios):.3f}  (goal <= 1.05)"
        )


if __name__ == "__main__":
    # this checkout's package, or the baseline's in its worker process
    worker = "--worker" in sys.argv and sys.argv[sys.argv.index("--worker") + 1]
    sys.path.insert(0, worker or str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
