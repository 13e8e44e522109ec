"""The score and write steps that `evaluate` and `score` share: the loaded tasks and
their answers are scored (:func:`mera_multi_hf.scoring.run_results.score_run`, a typed
:class:`~mera_multi_hf.scoring.records.Results`), then every file is rendered from those
records and written as one set (:mod:`mera_multi_hf.reporting.outputs`)."""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.scoring.options import ScoringOptions
from mera_multi_hf.scoring.records import Results


@dataclass
class Outcome:
    """What a run or a scoring gives back: its results, the files written, the notes."""

    results: Results
    files: dict[str, Path]
    notes: list[str]
    output_dir: Path
    counts: dict = field(default_factory=dict)  # evaluate: requested, resumed, generated
    unchanged: bool = False  # nothing new: the outputs there were kept, not written again

    def as_dict(self) -> dict:
        """The Python API's answer: results.json's sections, the files, the notes."""
        return {
            "output_dir": str(self.output_dir),
            "run": self.results.run.to_dict(),
            "tasks": [r.to_dict() for r in self.results.tasks.values()],
            "summary": self.results.summary.to_dict(),
            "files": self.files,
            "notes": self.notes,
            "counts": self.counts,
            "table": self.table(),
        }

    def table(self) -> str:
        """The short text table `mera-multi evaluate` prints: the model(s), the examples
        (evaluate: how many came from the sample log), the scores, the notes, the files."""
        from mera_multi_hf.reporting.outputs import results_table

        run, tasks = self.results.run, list(self.results.tasks.values())
        revision = run.details.get("revision")
        lines = [f"model: {run.model}" + (f"  (revision {revision})" if revision else "")]
        lines += [
            f"model of {task.task}: {task.model}"
            for task in tasks
            if task.model not in (None, run.model)
        ]
        if self.counts:
            lines.append(
                f"examples: {self.counts['requested']}  (from the sample log: "
                f"{self.counts['resumed']}, generated now: {self.counts['generated']})"
            )
        table = results_table(tasks, self.notes, self.files)
        if self.unchanged:  # its last line would say "wrote: ..."
            table = table.rsplit("\n", 1)[0] + "\n" + UNCHANGED.format(folder=self.output_dir)
        return "\n".join(lines + [table])


UNCHANGED = (
    "unchanged: {folder} (nothing new since its outputs were written: the same answers, "
    "data, options and code; none written again)"
)


@dataclass
class Answered:
    """What a command hands to the score step: each task's answers and where they were
    recorded (a run's sample log, or the predictions files `score` was given)."""

    answers: dict[str, dict]  # task key -> {example id: output}
    fields: dict  # the command's own fields of the run record
    notes: list[str] = field(default_factory=list)
    models: dict[str, str] = field(default_factory=dict)  # task key -> the model that answered
    logs: dict | None = None  # evaluate: task key -> its sample-log records
    given_logs: dict | None = None  # score: task key -> file name -> its lines
    logged: dict = field(default_factory=dict)  # (task, split) -> examples in the sample log
    context: int | None = None  # dialogue turns shown with each question


def score_and_write(
    folder,
    loaded: list,
    answered: Answered,
    options: ScoringOptions,
    started: float,
    *,
    rewrite: bool = False,
) -> Outcome:
    """Score ``answered`` against the ``loaded`` tasks and write every output into
    ``folder`` (claimed and locked by the caller). When the folder holds the outputs of
    these very inputs (:mod:`.fingerprint`), each still as written, they are kept and
    read back instead (``rewrite``: write them again all the same: --overwrite)."""
    gc.freeze()  # what exists now (the loaded splits, the libraries) outlives these steps:
    # the collector's passes here walk only what they make (a tenth of a second less)
    try:
        return _score_and_write(folder, loaded, answered, options, started, rewrite)
    finally:
        gc.unfreeze()


def _score_and_write(folder, loaded, answered: Answered, options, started, rewrite) -> Outcome:
    from mera_multi_hf.pipeline.fingerprint import outputs_fingerprint
    from mera_multi_hf.reporting.outputs import run_files
    from mera_multi_hf.reporting.reports import write_outputs
    from mera_multi_hf.scoring.run_results import score_run

    stamp = outputs_fingerprint(loaded, answered, options)
    if not rewrite and written_from(folder, stamp):
        results = Results.read(folder.path)
        results.run.details.pop("files", None)  # the files' sha256s, added as written
        files = {name: folder.path / name for name in folder.info()["outputs"]["files"]}
        notes = outcome_notes(loaded, answered, results)
        return Outcome(results, files, notes, folder.path, unchanged=True)
    coverage = coverage_change(folder, loaded, answered.logged)
    results = score_run(
        loaded,
        answered.answers,
        options,
        fields=answered.fields,
        started=started,
        models=answered.models,
        sample_files=answered.logs is not None,
        coverage=coverage,
    )
    notes = outcome_notes(loaded, answered, results)
    with folder.staging() as stage:  # the page's media are written there as made
        files = run_files(
            results,
            loaded,
            notes=notes,
            logs=answered.logs,
            given_logs=answered.given_logs,
            answers=answered.answers,
            context=answered.context,
            submission=not options.no_submission,
            stage=stage,
        )
        written = write_outputs(folder, files, results, stamp)
    return Outcome(results, written, notes, folder.path)


def written_from(folder, stamp: str) -> bool:
    """Whether ``folder``'s outputs were written from inputs of fingerprint ``stamp`` and
    are all there as written: no file of the set missing, changed or opened to others,
    none added or left over from another set (the sample logs and the manifest, which
    the command itself keeps writing, aside)."""
    from mera_multi_hf.core.outputs import still_written

    made = folder.info().get("outputs")
    if not (isinstance(made, dict) and made.get("fingerprint") == stamp):
        return False
    files, private = made.get("files"), made.get("private")
    if not (isinstance(files, dict) and isinstance(private, list)):
        return False
    return set(files) == folder.owned() - folder.claimed and still_written(folder, files, private)


def outcome_notes(loaded: list, answered: Answered, results: Results) -> list[str]:
    """The results' notes: the privacy of the data, the command's, the scores', and first
    what changed in the reports' coverage (what results.json records of it)."""
    from mera_multi_hf.reporting.outputs import result_notes

    notes = [d.privacy_note for d in loaded if d.privacy_note] + answered.notes
    coverage = results.run.details.get("coverage_change")
    return ([coverage["note"]] if coverage else []) + notes + result_notes(results)


def coverage_change(folder, loaded: list, logged: dict) -> dict | None:
    """What the reports cover now against what the reports they replace covered (tasks,
    split, examples): None when the same (or no reports of this tool's are replaced),
    else both and a one-line note. ``logged``: (task, split) -> examples in the log."""
    if "results.json" not in folder.owned():
        return None
    try:
        old = json_read.read_file(folder.path / "results.json")["run"]
        before = {k: {"split": old["split"], "n": n} for k, n in old["n_examples"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # not a results file this version can read: nothing to compare
    after = {d.key: {"split": d.split, "n": len(d.examples)} for d in loaded}
    if before == after:
        return None

    def named(key, cover):
        return key + (f" ({cover['split']})" if cover["split"] != "test" else "")

    def of_logged(d):
        n = logged.get((d.key, d.split))
        return f" of {n} logged" if n is not None else ""

    now = [
        f"{len(d.examples)}{of_logged(d)} examples of {named(d.key, after[d.key])}"
        for d in loaded
        if before.get(d.key) != after[d.key]
    ]
    gone = [named(k, c) for k, c in before.items() if k not in after]
    note = (
        "results now cover "
        + "; ".join(now or ["fewer tasks"])
        + (f", no longer {', '.join(gone)}" if gone else "")
        + " (the reports replaced covered "
        + ", ".join(f"{c['n']} of {named(k, c)}" for k, c in before.items())
        + ")"
    )
    return {"before": before, "after": after, "note": note}
