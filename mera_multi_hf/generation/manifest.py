"""The run manifest, ``run_manifest.json`` in the output folder: what a run is, written
when it starts (before any generation) and carried across its resumes.

- ``fixed``: what every session of the run must agree with: the model's identity (id,
  revision: the Hub commit, or a local folder's fingerprint) and the request-hash inputs
  (the backend's settings), the seed; the backend's options as given and, once a
  session has loaded the model, as resolved (dtype, device, family, model class,
  context length, prompt mode, video input).
- ``tasks``: per task and split, the model that answers it, its data source and
  fingerprint, its generation settings; a run extended to more tasks adds entries.
- ``sessions``: one entry per start or resume: the command as typed (masked), the values
  taken from the environment, processes, batch size, package versions, times.

results.json is made from it, so a resume that generates nothing records what the run
was, not what this session happened to load.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

from mera_multi_hf.core import json_read
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.masking import mask_secrets

MANIFEST = "run_manifest.json"
# what a session's engine reports that belongs to that session, not to the run
SESSION_ONLY = ("prompts_cut_here",)


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_manifest(folder) -> dict | None:
    """The manifest of a run folder (an OutputFolder or a path) when this tool wrote it
    there; None when there is none (a run made before manifests, or not a run folder).
    One that cannot be read stops the command in one line: it is the record of the
    run's earlier sessions and is never replaced."""
    from pathlib import Path

    from mera_multi_hf.core.outputs import OutputFolder

    folder = folder if isinstance(folder, OutputFolder) else OutputFolder(Path(folder), kind="run")
    path = folder.path / MANIFEST
    if MANIFEST not in folder.owned() or not path.exists():
        return None
    try:
        doc = json_read.read_file(path)
    except OSError as err:
        _unreadable(path, err.strerror or str(err))
    except ValueError:
        _unreadable(path, "not valid JSON")
    if not _well_formed(doc):
        _unreadable(path, "not the JSON object of a run manifest")
    return doc


def _well_formed(doc) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("fixed"), dict)
        and isinstance(doc.get("tasks", {}), dict)
        and all(isinstance(t, dict) for t in doc.get("tasks", {}).values())
        and isinstance(doc.get("sessions", []), list)
    )


def _unreadable(path, why: str):
    raise MeraError(
        f"{path} cannot be read ({why}): it is the record of this run's earlier sessions "
        "and is never replaced; restore it, move it away to start the record afresh, or "
        "use a new --output-dir"
    )


def with_earlier_tasks(old: dict | None, config, specs: list, sources: dict, say: bool):
    """(tasks, sources) of this session: those named, then each task that an earlier
    session of the run answered on this split (its own data source): another task run
    into a run folder extends the run, as a larger --limit does, and every earlier
    task's answers stay in its reports. --overwrite replaces the run instead."""
    from mera_multi_hf.tasks.table import get_task

    named = {t.key for t in specs}
    earlier = {
        e.get("task"): e.get("source")
        for e in (old or {}).get("tasks", {}).values()
        if e.get("split") == config.split
        and isinstance(e.get("task"), str)
        and isinstance(e.get("source"), str)
        and e["task"] not in named
    }
    if not earlier or config.overwrite:
        return specs, sources
    if say:
        print(
            f"mera-multi: note: this run folder holds answers to {', '.join(sorted(earlier))}"
            f" too: the run is extended, and its reports cover those tasks as well (their "
            "answers are read from the sample log; use a new --output-dir for a run of "
            "its own)",
            file=sys.stderr,
        )
    added = [get_task(key) for key in sorted(earlier)]
    return specs + added, {**sources, **{t.key: earlier[t.key] for t in added}}


def check_data(old: dict | None, loaded, config, where, say: bool) -> dict | None:
    """The earlier manifest to carry on (None under --overwrite). A task whose data is
    not the data its logged answers were made for (other content: another source, or
    changed files) stops a resume in one line; under --overwrite it is answered afresh,
    and this says so."""
    changed = []
    for d in loaded:
        entry = ((old or {}).get("tasks") or {}).get(f"{d.task.key}/{config.split}") or {}
        if entry.get("content") not in (None, getattr(d, "content", None)):
            now = d.source or d.task.hub_id
            changed.append(f"{d.task.key} (from {entry.get('source')} there, {now} now)")
    if changed and not config.overwrite:
        raise MeraError(
            f"{where} holds answers made for other data: {'; '.join(changed)}: its rows "
            f"differ (see {MANIFEST}). Use a new --output-dir, or --overwrite to answer "
            "those tasks afresh"
        )
    if changed and say:
        print(
            f"mera-multi: note: the data of {'; '.join(changed)} is not the data of the "
            "answers logged here: they are generated afresh",
            file=sys.stderr,
        )
    return None if config.overwrite else old


def fixed_settings(config, engine) -> dict:
    """What a resume must agree with (the request hash's inputs and the model's identity)."""
    info = engine.info()
    return {
        "model": info.pop("model"),
        "revision": info.pop("revision"),
        "backend": info.pop("backend"),
        "settings": engine.settings(),
        "seed": config.seed,
        "user_choices": {
            k: v
            for k, v in (("max_new_tokens", config.max_new_tokens), ("stop", config.stop))
            if v is not None
        },
        "backend_options": session_free(info),
        "resolved": None,
    }


def session_free(info: dict) -> dict:
    """An engine's info without what belongs to one session (nested models' too)."""
    return {
        k: session_free(v) if isinstance(v, dict) else v
        for k, v in info.items()
        if k not in SESSION_ONLY
    }


def task_entries(config, engine, loaded) -> dict:
    """Per ``task/split``: the model that answers it, its data and generation settings."""
    from mera_multi_hf.generation.backends import model_for

    return {
        f"{d.task.key}/{config.split}": {
            "task": d.task.key,
            "split": config.split,
            "model": model_for(engine, {d.task.modality}),
            "source": str(d.source or d.task.hub_id),
            "fingerprint": d.fingerprint,
            "content": getattr(d, "content", None),
            "max_new_tokens": config.max_new_tokens or d.task.max_new_tokens,
            "stop": list(config.stop if config.stop is not None else d.task.stop),
            "dialogue_context": (
                config.dialogue_context
                if config.dialogue_context is not None
                else d.task.dialogue.context_turns
            )
            if d.task.dialogue
            else None,
        }
        for d in loaded
    }


def check_fixed(old: dict | None, fixed: dict, where) -> None:
    """One line when this session's fixed settings are not the run's."""
    if old is None:
        return
    for key in ("model", "revision", "backend", "settings", "seed"):
        if old["fixed"].get(key) != fixed[key]:
            raise MeraError(
                f"{where} holds a run with other settings ({key}: {_short(old['fixed'].get(key))} "
                f"there, {_short(fixed[key])} now; see {MANIFEST}). Use a new --output-dir, "
                "or --overwrite to replace that run"
            )


def _short(value) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def start(old: dict | None, fixed: dict, tasks: dict, session: dict) -> dict:
    """The manifest with this session begun: the run's first, or one more of it."""
    if old is None:
        return {
            "created_by": "mera-multi-hf",
            "fixed": fixed,
            "tasks": tasks,
            "sessions": [session],
        }
    if fixed["backend_options"] != old["fixed"].get("backend_options"):
        session = dict(session, backend_options_here=fixed["backend_options"])  # --base-url, ...
    return {
        **old,
        "tasks": {**old.get("tasks", {}), **tasks},
        "sessions": list(old.get("sessions", [])) + [session],
    }


def finish(manifest: dict, engine, counts: dict) -> dict:
    """The manifest with this session ended: the options the model resolved to when it
    loaded (those of the first session that loaded it; a part loaded only later, such as
    the demo's audio model, added), the prompts cut and the counts of this session."""
    info = {k: v for k, v in engine.info().items() if k not in ("model", "revision", "backend")}
    fixed, session = manifest["fixed"], dict(manifest["sessions"][-1])
    if loaded(engine):
        first, resolved = fixed.get("resolved") or {}, session_free(info)
        fixed["resolved"] = {**resolved, **first}
        if any(first.get(k, v) != v for k, v in resolved.items()):
            session["resolved_here"] = resolved  # this session's model resolved otherwise
    session.update(finished_at=now(), counts=counts, prompts_cut_here=cut(info))
    manifest["sessions"][-1] = session
    return manifest


def loaded(engine) -> bool:
    """Whether this session loaded a model (no: a full resume, or a served model)."""
    parts = [engine] + [getattr(engine, n) for n in ("main", "audio") if hasattr(engine, n)]
    return any(getattr(p, "model", None) is not None for p in parts)


def cut(info: dict) -> list[str]:
    """The prompts this session's engines cut to fit the model ("task id=N")."""
    found = list(info.get("prompts_cut_here") or [])
    return found + [x for v in info.values() if isinstance(v, dict) for x in cut(v)]


def backend_options(manifest: dict) -> dict:
    """The backend options a results file records: as resolved when a session loaded the
    model, else as given; for hf, the prompts cut in every session."""
    fixed = manifest["fixed"]
    options = dict(fixed.get("resolved") or fixed["backend_options"])
    if fixed["backend"] == "hf":
        options["prompts_cut_here"] = sorted(
            {x for s in manifest["sessions"] for x in s.get("prompts_cut_here") or []}
        )
    return options


def generation(manifest: dict, keys: list[str]) -> dict:
    """How the answers of these ``task/split`` entries were generated."""
    tasks = [manifest["tasks"][k] for k in keys]
    return {
        "do_sample": False,
        "num_beams": 1,
        "max_new_tokens": {t["task"]: t["max_new_tokens"] for t in tasks},
        "stop": {t["task"]: t["stop"] for t in tasks},
        "user_choices": manifest["fixed"].get("user_choices", {}),
        "dialogue_context": {
            t["task"]: t["dialogue_context"] for t in tasks if t["dialogue_context"] is not None
        },
    }


def provenance(manifest: dict, keys: list[str]) -> dict:
    """The run's part of a results record for these ``task/split`` entries: the model,
    how it generated, the sessions (what `evaluate` records, and `score` of its log)."""
    fixed = manifest["fixed"]
    options = {
        k: mask_secrets(v) if isinstance(v, str) else v
        for k, v in backend_options(manifest).items()
    }
    return {
        "model": fixed["model"],
        "revision": fixed["revision"],
        "backend": fixed["backend"],
        "dtype": options.pop("dtype", None),
        "backend_options": options,
        "generation": generation(manifest, keys),
        "seed": fixed["seed"],
        "prompt_source": "the dataset's per-example `instruction`, filled as the task's "
        "official doc_to_text, rendered "
        + (
            "with the model's chat template"
            if options.get("prompt_mode") != "plain"
            else "as plain text"
        )
        + "; media placeholders in place",
        "sessions": manifest["sessions"],
    }
