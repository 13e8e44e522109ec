"""What `evaluate` records of its run beside the scores: the run record's fields read
off the manifest and the merged sample log, and the run's notes (the score step's
input, :class:`~mera_multi_hf.pipeline.outcome.Answered`)."""

from __future__ import annotations

from mera_multi_hf.generation.backends.model_kinds import model_kind
from mera_multi_hf.generation.config import RunConfig
from mera_multi_hf.generation.run import Generated
from mera_multi_hf.pipeline.outcome import Answered
from mera_multi_hf.tasks.dialogue import meta_disagreements


def answered_by_run(
    config: RunConfig, loaded: list, generated: Generated, preflight: dict | None
) -> Answered:
    """The run's answers for the score step: the merged sample log, the models that
    answered, the run record's fields and the notes."""
    fields = evaluate_run_fields(config, generated.manifest, loaded)
    fields.update(sample_log_findings(loaded, generated.logs, preflight, generated.damaged))
    notes = run_notes(config, generated.manifest, loaded)
    if fields["failed_examples"]:
        notes.append(failed_examples_note(fields["failed_examples"]))
    return Answered(
        generated.answers(),
        fields,
        notes,
        models=generated.models,
        logs=generated.logs,
        logged=generated.logged,
        context=config.dialogue_context,
    )


def sample_log_findings(
    loaded: list, logs: dict, preflight: dict | None, damaged: list[str]
) -> dict:
    """The run record's fields read off the sample log (``logs``: task key -> its
    records) and the preflight's report, in the order results.json lists them."""

    def flagged(field: str) -> dict[str, int]:  # per task: the records with ``field`` set
        return {d.key: sum(bool(rec.get(field)) for rec in logs[d.key]) for d in loaded}

    def each_record():
        for d in loaded:
            for rec in logs[d.key]:
                yield d.key, rec["id"], rec

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
    from the run's manifest; the score step adds those every command records."""
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
