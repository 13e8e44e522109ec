"""compare's protocol check: every recorded setting that differs between two runs (the run
records' generation, model, data and scoring settings, and the hashes of the prompts
their sample logs hold)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from mera_multi_hf.core import json_read

PROTOCOL = (
    "mode",
    "model",
    "revision",
    "backend",
    "dtype",
    "backend_options",
    "generation",
    "prompt_source",
    "metric_modes",
    "judge",
    "dataset_source",
    "split",
    "limit",
    "dataset_fingerprint",
    "seed",
    "bootstrap",
)


def _flat(value, prefix: str = "") -> dict:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def prompt_hashes(folder: str, tasks) -> dict:
    """Task -> sha256 of the prompts its sample log holds, in id order (evaluate runs)."""
    out = {}
    for task in tasks:
        for file in sorted(Path(folder).glob(f"samples_{task}_*.jsonl")):
            rows = [row for _, row in json_read.iter_jsonl(file)]
            prompts = [r.get("prompt") for r in sorted(rows, key=lambda r: r.get("id", 0))]
            out[task] = hashlib.sha256(
                json.dumps(prompts, ensure_ascii=False).encode()
            ).hexdigest()[:16]
    return out


def protocol_differences(a: dict, b: dict, tasks) -> list[dict]:
    """Every recorded setting that differs: generation, model and revision, prompt
    source and hashes, dialogue context, metric modes, the judge, the data source."""
    run_a, run_b = a.run.to_dict(), b.run.to_dict()
    fa = _flat({k: run_a.get(k) for k in PROTOCOL})
    fb = _flat({k: run_b.get(k) for k in PROTOCOL})
    diffs = [
        {"field": k, "a": fa.get(k), "b": fb.get(k)}
        for k in sorted(set(fa) | set(fb))
        if fa.get(k) != fb.get(k)
    ]
    ha, hb = prompt_hashes(a.folder, tasks), prompt_hashes(b.folder, tasks)
    for task in tasks:
        if ha.get(task) != hb.get(task):
            diffs.append(
                {
                    "field": f"prompt_sha256.{task}",
                    "a": ha.get(task, "not logged"),
                    "b": hb.get(task, "not logged"),
                }
            )
    return diffs
