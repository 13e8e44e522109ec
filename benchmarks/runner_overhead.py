"""Runner overhead: 200 examples through `run_evaluation` against a bare loop.

The bare loop is the least a script must do: for the same batches (same examples,
same order, same batch size) it applies the chat template, calls the processor, calls
`model.generate` with the same greedy settings and decodes; prompts and decoded images
are prepared before its clock starts. The runner does all of it plus reading the
dataset, rendering and hashing requests, the sample log, per-batch and final scoring,
reports and the submission. Both use the same loaded model; the one-time conversion
of the raw folder to Parquet is done before either clock starts.

    python benchmarks/runner_overhead.py                # tiny model (worst case: generate is ~free)
    python benchmarks/runner_overhead.py --size small   # a 4-layer random model (generate weighs more)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def make_raw(out: Path, n: int) -> Path:
    """The bundled sample's examples (test + shots) repeated to n test examples."""
    from mera_multi_hf.sample_data import bundled_sample

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
    (out / "test.json").write_text(json.dumps({"access": "public", "data": data}, ensure_ascii=False),
                                   encoding="utf-8")
    (out / "shots.json").write_text(json.dumps({"data": data[:4]}, ensure_ascii=False), encoding="utf-8")
    shutil.copy(src / "raw_dataset_meta.json", out / "raw_dataset_meta.json")
    return out


class Timed:
    """An HFBackend wrapper that times what the runner asks of it (encode / generate / decode)."""

    def __init__(self, backend):
        self.inner = backend
        self.times = defaultdict(float)
        self.batches = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, requests):
        import torch

        b = self.inner
        self.batches.append([r.id for r in requests])
        t0 = time.perf_counter()
        inputs = b.encode(requests)
        t1 = time.perf_counter()
        config = b.generation_config
        config.max_new_tokens = max(r.max_new_tokens for r in requests)
        with torch.inference_mode():
            out = b.model.generate(**inputs, generation_config=config)
        t2 = time.perf_counter()
        texts = b.tokenizer.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
        t3 = time.perf_counter()
        self.times["encode (chat template + processor + image decode)"] += t1 - t0
        self.times["model.generate"] += t2 - t1
        self.times["decode"] += t3 - t2
        return texts


def bare_loop(backend, ds, batches, prepared: bool = True):
    """The same batches with nothing around them.

    ``prepared``: prompts, chat templates and decoded images are made before the clock
    starts (the strictest baseline); otherwise each batch reads its rows from the dataset
    inside the clock, as a hand-written evaluation script would.
    """
    import torch

    from mera_multi_hf.prompts import render_prompt
    from mera_multi_hf.runner.chat import chat_messages
    from mera_multi_hf.runner.request import Request

    def prepare(row):
        text, media = render_prompt("ruhhh_image", row)
        chat = backend.processor.apply_chat_template(
            chat_messages(Request("", "", 0, text, [], 0)), add_generation_prompt=True, tokenize=False)
        return chat, [m.convert("RGB") for _, m in media]

    position = {m["id"]: n for n, m in enumerate(ds["meta"])}
    by_id = {}
    if prepared:
        by_id = {row["meta"]["id"]: prepare(row) for row in ds}
    config = backend.generation_config
    config.max_new_tokens = 16
    outputs = {}
    t0 = time.perf_counter()
    for batch in batches:
        rows = [by_id[i] if prepared else prepare(ds[position[i]]) for i in batch]
        texts = [chat for chat, _ in rows]
        images = [img for _, imgs in rows for img in imgs]
        enc = backend.processor(text=texts, images=images, padding=True, return_tensors="pt")
        with torch.inference_mode():
            out = backend.model.generate(**enc, generation_config=config)
        decoded = backend.tokenizer.batch_decode(out[:, enc["input_ids"].shape[1]:],
                                                 skip_special_tokens=True)
        outputs.update(zip(batch, decoded))
    return time.perf_counter() - t0, outputs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--size", choices=("tiny", "small"), default="tiny")
    parser.add_argument("--repeats", type=int, default=3, help="best of N for both sides")
    args = parser.parse_args(argv)

    import torch

    from mera_multi_hf.loading import load_task
    from mera_multi_hf.runner import run_evaluation
    from mera_multi_hf.runner.hf_backend import HFBackend
    from mera_multi_hf.tiny_model import TINY_MODEL_ID, tiny_model_path

    torch.set_num_threads(max(1, torch.get_num_threads()))
    work = Path(tempfile.mkdtemp(prefix="mera-overhead-"))
    os.environ.setdefault("MERA_MULTI_CACHE", str(work / "cache"))
    try:
        raw = make_raw(work / "raw", args.n)
        ds = load_task("ruhhh_image", source=raw, split="test")  # one-time Parquet export
        model = TINY_MODEL_ID if args.size == "tiny" else str(tiny_model_path("small"))
        backend = HFBackend(model, batch_size=args.batch_size)
        backend.load()

        runner_times, bare_times, script_times, last = [], [], [], None
        for k in range(args.repeats):
            timed = Timed(backend)
            t0 = time.perf_counter()
            result = run_evaluation(model, "ruhhh_image", data=str(raw), output_dir=work / f"run{k}",
                                    batch_size=args.batch_size, backend=timed, progress=False)
            runner_times.append(time.perf_counter() - t0)
            bare, outputs = bare_loop(backend, ds, timed.batches)
            bare_times.append(bare)
            script, script_outputs = bare_loop(backend, ds, timed.batches, prepared=False)
            script_times.append(script)
            assert script_outputs == outputs
            if last is None or runner_times[-1] == min(runner_times):
                last = timed
            answers = {r["id"]: r["generation"] for r in map(json.loads, Path(
                result["files"]["samples"][0]).read_text().splitlines())}
            assert answers == outputs, "the runner and the bare loop disagree"
        runner, bare, script = min(runner_times), min(bare_times), min(script_times)
        inside = sum(last.times.values())
        print(f"model: {model} ({args.size}), {args.n} examples, batch size {args.batch_size}, "
              f"torch threads {torch.get_num_threads()}, best of {args.repeats}")
        print(f"bare loop (template + processor + generate + decode): {bare:.3f} s")
        print(f"runner (run_evaluation, everything):                 {runner:.3f} s")
        print(f"script loop (reads rows + images in the clock):      {script:.3f} s")
        print(f"ratio runner / bare: {runner / bare:.3f}   runner / script loop: {runner / script:.3f}")
        print("where the runner's time goes:")
        for name, value in last.times.items():
            print(f"  {name:<52} {value:.3f} s")
        print(f"  {'everything else (data, requests, log, scoring, reports)':<52} "
              f"{runner - inside:.3f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
