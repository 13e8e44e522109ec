"""The per-example files of a run: samples_<task>_<split>.jsonl (the sample log's lines
with today's target, answers and scores), the public copies logs_public.zip carries,
and the records results.html shows. Each is made from the typed records (the loaded
task, its TaskResult); whether a split is private is the record's ``private``."""

from __future__ import annotations

import json

from mera_multi_hf.core import json_read

# What a predictions line may carry of the gold: this project's sample log (target,
# metrics) and lm-eval's (target and its hash; the doc's outputs; each metric the line's
# "metrics" names, at the top level).
GOLD_KEYS = ("target", "target_hash", "metrics", "gold_private")


def sample_name(task_key: str, split: str) -> str:
    return f"samples_{task_key}_{split}.jsonl"


def sample_records(loaded, result, logged: list[dict], upload: bool = False) -> list[dict]:
    """Each logged generation of one task (``loaded``: its LoadedTask, ``logged``: its
    sample-log records in example order) with today's target, answers and per-example
    scores (``result``: its TaskResult; the judge's too, when one scored).

    For a private split the local file marks each line (``gold_private``) and the copy
    made for upload (``upload``: logs_public.zip) carries no target and no metric."""
    answers, records = result.answer_of(), []
    for example, line in zip(loaded.examples, logged):
        record, answer = dict(line), answers[example.id]  # its generation, filtered once
        record["model"] = result.model or record.get("model")  # the task's, from the manifest
        record.update(
            target=example.gold,
            filtered=answer.filtered,
            extracted=answer.extracted,
            metrics=dict(answer.scores),
            prompt_variant=answer.prompt_variant,
            prompt_variant_number=answer.prompt_variant_number,
        )
        if loaded.private:
            if upload:
                del record["target"], record["metrics"]
            else:
                record["gold_private"] = True
        records.append(record)
    return records


def jsonl(records: list[dict]) -> bytes:
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def public_logs(
    loaded: list, results: dict, logs: dict | None, given_logs: dict | None
) -> dict[str, bytes]:
    """logs_public.zip's files, the same for both commands: a run's sample logs
    (``logs``: task key -> its sample-log records), or the predictions files `score` was
    given (``given_logs``: task key -> file name -> its lines); for a private split with
    no gold answer and no per-example score in them."""
    out = {}
    for d in loaded:
        result = results[d.key]
        if logs is not None:
            out[sample_name(d.key, d.split)] = jsonl(
                sample_records(d, result, logs[d.key], upload=True)
            )
        for name, records in ((given_logs or {}).get(d.key) or {}).items():
            records = json_read.replace_unencodable(records)[0]  # as given, less a surrogate
            out[name] = jsonl([without_gold(r) if d.private else r for r in records])
    return out


def without_gold(record: dict) -> dict:
    """A predictions line with no gold answer and no per-example score left."""
    from mera_multi_hf.scoring.registry import METRICS

    named = record.get("metrics") if isinstance(record.get("metrics"), list) else []
    drop = set(GOLD_KEYS) | set(METRICS) | {m for m in named if isinstance(m, str)}
    out = {k: v for k, v in record.items() if k not in drop}
    if isinstance(out.get("doc"), dict):
        out["doc"] = {k: v for k, v in out["doc"].items() if k != "outputs"}
    return out


def prediction_records(
    examples, predictions: dict, result, private: bool = False, replaced: dict | None = None
) -> list[dict]:
    """Sample-file-like records of scored predictions (what results.html shows); the
    filtered answers and scores are the scoring's (``result``: a TaskResult);
    ``replaced``: the answers whose lone surrogates were made U+FFFD."""
    answers = result.answer_of()
    replaced = replaced if replaced is not None else getattr(predictions, "replaced", {})
    return [
        {
            "id": e.id,
            "prompt": e.prompt,
            "generation": predictions[e.id],
            "filtered": answers[e.id].filtered,
            "target": e.gold,
            "metrics": dict(answers[e.id].scores),
            "prompt_variant": e.prompt_variant,
            "prompt_variant_number": e.prompt_variant_number,
            **({"gold_private": True} if private else {}),
            **({"unencodable_replaced": replaced[e.id]} if e.id in replaced else {}),
        }
        for e in examples
        if e.id in predictions
    ]
