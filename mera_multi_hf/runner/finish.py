"""The last stages of a run, on the main process: the merged sample log and the run's
part of the record go to :func:`mera_multi_hf.finalize.finalize` (shared with `score`),
which scores them and writes every output, the sample files included, as one set."""
from __future__ import annotations

from ..finalize import TaskPart, finalize
from ..tiny_model import TINY_MODEL_ID
from . import dialogue
from .config import RunConfig


def _is_official(data, config: RunConfig) -> bool:
    """The whole official test split from the official Hub copy (what a model card may claim)."""
    return (config.split == "test" and str(data.source or data.task.hub_id) == data.task.hub_id
            and len(data.examples) == data.full_size)


def finish_run(folder, config: RunConfig, engine, loaded: list, records: dict, *,
               counts: dict, started: float, world: int, preflight: dict | None = None,
               damaged: list[str] = ()) -> dict:
    """Score the merged sample log and write every output (:func:`finalize`)."""
    split = config.split
    parts = [TaskPart(d.task, d.examples, {e.id: records[(d.task.key, split, e.id)]["generation"]
                                           for e in d.examples},
                      str(d.source or d.task.hub_id), _is_official(d, config), d.dataset,
                      d.fingerprint, [records[(d.task.key, split, e.id)] for e in d.examples],
                      config.dialogue_context)
             for d in loaded]
    info = run_record(config, engine, loaded, world=world)
    # prompts cut from the left to fit the model (the harness's rule), from the sample log
    info["truncated_prompts"] = {
        d.task.key: sum(bool(records[(d.task.key, split, e.id)].get("prompt_tokens_cut"))
                        for e in d.examples) for d in loaded}
    info["preflight"] = preflight
    # generations whose lone surrogates were replaced by U+FFFD, per task (sample log)
    info["unencodable_replaced"] = {
        d.task.key: sum(bool(records[(d.task.key, split, e.id)].get("unencodable_replaced"))
                        for e in d.examples) for d in loaded}
    # sample-log lines skipped as unreadable ("file:line: why"), the file left as it was
    info["sample_log_damaged"] = {"lines": len(damaged), "first": list(damaged[:20])}
    out = finalize(folder, parts, config.scoring(), split=split, run_info=info, started=started,
                   notes=run_notes(config, engine, loaded))
    return dict(out, counts=counts)


def run_notes(config, engine, loaded) -> list[str]:
    notes = []
    partial = [d.task.key for d in loaded if len(d.examples) < d.full_size]
    if partial and config.split == "test":
        notes.append(f"submission.zip covers only the first {config.limit} examples of "
                     f"{', '.join(partial)} (--limit): not a leaderboard submission")
    if engine.model_id == TINY_MODEL_ID:
        notes.append("the built-in tiny model has random weights: its answers are noise "
                     "(a plumbing check, not a score)")
    return notes


def run_record(config: RunConfig, engine, loaded, *, world) -> dict:
    """The fields of the run record that belong to a run (the model, how it generated);
    finalize adds those every command records."""
    from ..provenance import command_line, mask_secrets

    info = engine.info()
    return {
        "mode": "evaluate",
        "model": info.pop("model"), "revision": info.pop("revision"),
        "backend": info.pop("backend"), "dtype": info.pop("dtype", None),
        "backend_options": {k: mask_secrets(v) if isinstance(v, str) else v
                            for k, v in info.items()},
        "generation": {
            "do_sample": False, "num_beams": 1,
            "max_new_tokens": {d.task.key: config.max_new_tokens or d.task.max_new_tokens
                               for d in loaded},
            "stop": {d.task.key: list(config.stop if config.stop is not None else d.task.stop)
                     for d in loaded},
            "user_choices": {k: v for k, v in (("max_new_tokens", config.max_new_tokens),
                                               ("stop", config.stop)) if v is not None},
            "dialogue_context": {d.task.key: config.dialogue_context
                                 if config.dialogue_context is not None
                                 else d.task.dialogue.context_turns
                                 for d in loaded if d.task.dialogue},
        },
        "prompt_source": "the dataset's per-example `instruction`, filled as the task's "
                         "official doc_to_text, rendered " +
                         ("with the model's chat template" if info.get("prompt_mode") != "plain"
                          else "as plain text") + "; media placeholders in place",
        "limit": config.limit,
        # ruTiE: examples whose meta placed them elsewhere than the official arithmetic
        "dialogue_meta_disagrees": {d.task.key: len(dialogue.meta_disagreements(d.task, d.examples))
                                    for d in loaded if d.task.dialogue},
        "batch_size": engine.batch_size, "num_processes": world, "seed": config.seed,
        "limits": config.limits().as_record(),
        "command": mask_secrets(command_line(config)),
    }
