"""The last stages of a run, on the main process: the merged sample log and the run's
part of the record go to :func:`mera_multi_hf.reporting.finalize.finalize` (shared with `score`),
which scores them and writes every output, the sample files included, as one set."""

from __future__ import annotations

from mera_multi_hf.generation.backends.model_kinds import model_kind
from mera_multi_hf.generation.config import RunConfig
from mera_multi_hf.reporting.finalize import TaskPart, finalize
from mera_multi_hf.tasks.dialogue import meta_disagreements


def _is_official(data, config: RunConfig) -> bool:
    """The whole official test split from the official Hub copy (what a model card may claim)."""
    return (
        config.split == "test"
        and str(data.source or data.task.hub_id) == data.task.hub_id
        and len(data.examples) == data.full_size
    )


def finish_run(
    folder,
    config: RunConfig,
    loaded: list,
    records: dict,
    *,
    counts: dict,
    manifest: dict,
    logged: dict,
    started: float,
    preflight: dict | None = None,
    damaged: list[str] = (),
) -> dict:
    """Score the merged sample log and write every output (:func:`finalize`); the run's
    record comes from its manifest."""
    split = config.split
    parts = task_parts(config, loaded, records, manifest, logged)
    info = evaluate_run_fields(config, manifest, loaded)
    info.update(sample_log_findings(loaded, records, split, preflight, damaged))
    notes = run_notes(config, manifest, loaded)
    if info["failed_examples"]:
        notes.append(failed_examples_note(info["failed_examples"]))
    out = finalize(
        folder, parts, config.scoring(), split=split, run_info=info, started=started, notes=notes
    )
    return dict(out, counts=counts)


def task_parts(
    config: RunConfig, loaded: list, records: dict, manifest: dict, logged: dict
) -> list[TaskPart]:
    """Each task's examples with their logged records, as :func:`finalize` scores them."""
    split = config.split
    tasks = manifest["tasks"]
    return [
        TaskPart(
            d.task,
            d.examples,
            {e.id: records[(d.task.key, split, e.id)]["generation"] for e in d.examples},
            str(d.source or d.task.hub_id),
            _is_official(d, config),
            d.dataset,
            d.fingerprint,
            [records[(d.task.key, split, e.id)] for e in d.examples],
            config.dialogue_context,
            model=tasks[f"{d.task.key}/{split}"]["model"],
            logged=logged.get((d.task.key, split)),
        )
        for d in loaded
    ]


def sample_log_findings(
    loaded: list, records: dict, split: str, preflight: dict | None, damaged: list[str]
) -> dict:
    """The run record's fields read off the sample log (and the preflight's report), in
    the order results.json lists them."""

    def flagged(field: str) -> dict[str, int]:  # per task: the records with ``field`` set
        return {
            d.task.key: sum(bool(records[(d.task.key, split, e.id)].get(field)) for e in d.examples)
            for d in loaded
        }

    def each_record():
        for d in loaded:
            for e in d.examples:
                yield d.task.key, e.id, records[(d.task.key, split, e.id)]

    return {
        # prompts cut from the left to fit the model (the harness's rule)
        "truncated_prompts": flagged("prompt_tokens_cut"),
        # examples whose media did not decode within the limits and the budget: empty answers
        "failed_examples": [
            {"task": task, "id": id_, "reason": rec["failed"]}
            for task, id_, rec in each_record()
            if rec.get("failed")
        ],
        "media_notes": {
            f"{task} id={id_}": rec["media_notes"]
            for task, id_, rec in each_record()
            if rec.get("media_notes")
        },
        "preflight": preflight,
        # generations whose lone surrogates were replaced by U+FFFD, per task
        "unencodable_replaced": flagged("unencodable_replaced"),
        # sample-log lines skipped as unreadable ("file:line: why"), the file left as it was
        "sample_log_damaged": {"lines": len(damaged), "first": list(damaged[:20])},
    }


def failed_examples_note(failed: list[dict]) -> str:
    """The results' note on the examples that failed (they count as empty answers)."""
    return (
        f"{len(failed)} examples failed and count as empty "
        f"answers (results.json run.failed_examples; a rerun tries them again), "
        f"e.g. {failed[0]['reason']}"
    )


def run_notes(config, manifest, loaded) -> list[str]:
    notes = []
    partial = [d.task.key for d in loaded if len(d.examples) < d.full_size]
    if partial and config.split == "test":
        notes.append(
            f"submission.zip covers only the first {config.limit} examples of "
            f"{', '.join(partial)} (--limit): not a leaderboard submission"
        )
    kind = model_kind(manifest["fixed"]["model"])  # what its kind says of its answers
    if kind is not None and kind.note:
        notes.append(kind.note)
    return notes


def evaluate_run_fields(config: RunConfig, manifest: dict, loaded) -> dict:
    """The fields of the run record that belong to a run (the model, how it generated),
    from the run's manifest; finalize adds those every command records."""
    from mera_multi_hf.generation.manifest import provenance

    session = manifest["sessions"][-1]
    record = {
        "mode": "evaluate",
        **provenance(manifest, [f"{d.task.key}/{config.split}" for d in loaded]),
    }
    record.update(
        {
            "limit": config.limit,
            # ruTiE: examples whose meta placed them elsewhere than the official arithmetic
            "dialogue_meta_disagrees": {
                d.task.key: len(meta_disagreements(d.task, d.examples))
                for d in loaded
                if d.task.dialogue
            },
            "batch_size": session["batch_size"],
            "num_processes": session["num_processes"],
            "limits": config.limits().as_record(),
            "command": session["command"],
            "environment": session["environment"],
        }
    )
    return record
