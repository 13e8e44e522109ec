"""The typed records of results.json: one example's answer (:class:`ExampleResult`), one
task's scoring (:class:`TaskResult`), the run (:class:`RunRecord`), the totals
(:class:`Summary`) and the whole file (:class:`Results`). Scoring makes them, the write stage
serialises them once into results.json, and `compare`, `leaderboard` and `view` read it back
through :meth:`Results.read`. docs/results.md describes them; docs/results.schema.json
is the file's JSON Schema.

``to_dict()`` gives exactly the JSON the dict-built records gave before the types (the
same keys in the same order); a key this version does not know is kept (``extra``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.core.errors import MeraError

# 2: results.json carries "schema_version"; files written before have none (version 1),
# with the same sections and keys. 3: a "prompts" section holds each scored task's
# prompt-variant table, and a task's examples table each example's variant.
SCHEMA_VERSION = 3


@dataclass
class ExampleResult:
    """One example's answer: the raw output, and the answer after the task's filters,
    computed once (:func:`example_results`) for the scoring, the sample log, the page and
    the submission; ``scores``: its per-example metric scores (gold known)."""

    id: int
    output: str
    filtered: str  # after the task's score filters: what is scored
    submitted: str  # after its submission filters: what submission.zip holds
    extracted: str  # the letter or text after an "Answer:" marker (unofficial EM, the logs)
    scores: dict[str, float] = field(default_factory=dict)
    # its prompt variant (mera_multi_hf.tasks.variants): the template's short id and its
    # number in order of first appearance in the split
    prompt_variant: str = ""
    prompt_variant_number: int = 0


def example_results(task, examples, predictions) -> list[ExampleResult]:
    """Every example's answer, filtered once; the submission's answer is the scored one
    when the task declares the same filters for both (every task today)."""
    from mera_multi_hf.scoring.filters import apply_filters
    from mera_multi_hf.scoring.metric_extraction import extract_answer

    choices, out = task.choices or None, []
    for example in examples:
        output = predictions[example.id]
        scored = apply_filters(task.score_filters, output)
        submitted = (
            scored
            if task.submit_filters == task.score_filters
            else apply_filters(task.submit_filters, output)
        )
        extracted = extract_answer(output, choices)
        out.append(
            ExampleResult(
                example.id,
                output,
                scored,
                submitted,
                extracted,
                prompt_variant=example.prompt_variant,
                prompt_variant_number=example.prompt_variant_number,
            )
        )
    return out


# The keys of a scored task, in results.json's order; an unscorable task has none of them.
SCORED_KEYS = (
    "metrics",
    "judge",
    "judge_not_computed",
    "unofficial",
    "leaderboard_metrics",
    "task_score_metrics",
    "task_score",
    "task_score_partial",
    "local_estimate",
    "scorable",
    "breakdown",
    "examples",
    "uncertainty",
    "task_score_uncertainty",
    "diagnostics",
)


@dataclass
class TaskResult:
    """One task's scoring (:func:`mera_multi_hf.scoring.score.score_task`), results.json's
    ``tasks[<key>]``. The open-ended parts (breakdowns, the per-example table, intervals,
    diagnostics) stay dicts as results.json holds them."""

    task: str
    class_name: str
    modality: str
    public: bool
    split: str
    n_examples: int
    official_metrics: list[str]
    judge_metrics: list[str]
    metric_modes: dict
    human_baseline: dict
    scorable: bool = False
    metrics: dict[str, float] = field(default_factory=dict)
    n_groups: int | None = None
    note: str | None = None  # why it is not scorable
    judge: dict[str, float] = field(default_factory=dict)
    judge_not_computed: list[str] = field(default_factory=list)
    unofficial: dict[str, float] = field(default_factory=dict)
    leaderboard_metrics: list[str] = field(default_factory=list)
    task_score_metrics: list[str] = field(default_factory=list)
    task_score: float | None = None
    task_score_partial: bool = False
    local_estimate: bool = False
    breakdown: dict = field(default_factory=dict)
    examples: dict = field(default_factory=dict)
    uncertainty: dict = field(default_factory=dict)
    task_score_uncertainty: dict | None = None
    diagnostics: dict = field(default_factory=dict)
    # the prompt-variant table (mera_multi_hf.scoring.prompt_table), results.json's
    # prompts[<key>] (beside the tasks: their numbers stay as they were); empty in files of
    # schema version 2 and before
    prompts: dict = field(default_factory=dict)
    model: str | None = None
    # its answers are private: decided when the split was loaded (the task's default, then
    # what the data says); every writer of gold-derived output asks this
    private: bool = False
    extra: dict = field(default_factory=dict)  # keys of a newer version, kept as read
    # every example's answer and scores; not in results.json (the sample logs hold them)
    answers: list[ExampleResult] = field(default_factory=list, repr=False)

    @property
    def per_example(self) -> dict[str, dict[int, float]]:
        """Metric -> {example id: score}, over the examples scored."""
        out: dict[str, dict[int, float]] = {}
        for answer in self.answers:
            for metric, score in answer.scores.items():
                out.setdefault(metric, {})[answer.id] = score
        return out

    def answer_of(self) -> dict[int, ExampleResult]:
        """Example id -> its answer."""
        return {a.id: a for a in self.answers}

    def to_dict(self) -> dict:
        """The task's entry of results.json."""
        out = {name: getattr(self, name) for name in HEAD_KEYS}
        if self.n_groups is not None:
            out["n_groups"] = self.n_groups
        if self.scorable:
            out.update((name, getattr(self, name)) for name in SCORED_KEYS)
        else:
            out.update(scorable=False, metrics=self.metrics)
            if self.note is not None:
                out["note"] = self.note
        if self.model is not None:
            out["model"] = self.model
        return {**out, **self.extra}

    @classmethod
    def from_dict(cls, doc: dict) -> TaskResult:
        known = {f.name for f in fields(cls)} - {"extra", "answers", "prompts"}
        if "private" not in doc:  # written before the record said it: the task's default
            doc = {**doc, "private": doc.get("split") == "test" and not doc.get("public", True)}
        return cls(
            **{k: v for k, v in doc.items() if k in known},
            extra={k: v for k, v in doc.items() if k not in known},
        )


HEAD_KEYS = (
    "task",
    "class_name",
    "modality",
    "public",
    "private",
    "split",
    "n_examples",
    "official_metrics",
    "judge_metrics",
    "metric_modes",
    "human_baseline",
)


@dataclass
class RunRecord:
    """results.json's ``run``: what makes the run reproducible. The fields every command
    records are typed; each command's own (generation settings, predictions files, ...)
    are in ``details``, in the order they were recorded."""

    run_id: str
    mode: str | None
    model: str | None
    tasks: list[str]
    split: str
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        head = {
            "run_id": self.run_id,
            "mode": self.mode,
            "model": self.model,
            "tasks": self.tasks,
            "split": self.split,
        }
        # the command's own values of mode and model come where it recorded them
        return {**head, **self.details}

    @classmethod
    def from_dict(cls, doc: dict) -> RunRecord:
        head = ("run_id", "mode", "model", "tasks", "split")
        return cls(
            doc.get("run_id"),
            doc.get("mode"),
            doc.get("model"),
            list(doc.get("tasks") or []),
            doc.get("split", "test"),
            {k: v for k, v in doc.items() if k not in head},
        )


@dataclass
class Summary:
    """results.json's ``summary`` (:func:`mera_multi_hf.scoring.score.summarize`): task scores
    averaged per modality, overall and over the private tasks, each with its interval."""

    task_score_definition: str
    tasks: dict[str, float]
    modality: dict[str, dict]
    overall: dict
    official_total: dict
    not_scorable: list[str]
    partial_task_scores: list[str]
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            **{f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"},
            **self.extra,
        }

    @classmethod
    def from_dict(cls, doc: dict) -> Summary:
        known = [f.name for f in fields(cls) if f.name != "extra"]
        empty = {
            "tasks": {},
            "modality": {},
            "overall": {},
            "official_total": {},
            "not_scorable": [],
            "partial_task_scores": [],
            "task_score_definition": "",
        }
        return cls(
            **{k: doc.get(k, empty[k]) for k in known},
            extra={k: v for k, v in doc.items() if k not in known},
        )


@dataclass
class Results:
    """The whole results.json: the run, the summary, every task's result by task key."""

    run: RunRecord
    summary: Summary
    tasks: dict[str, TaskResult]
    schema_version: int = SCHEMA_VERSION
    folder: str | None = None  # where it was read from (compare names the runs by it)

    def to_dict(self) -> dict:
        """results.json as written: always this version's schema."""
        return {
            "schema_version": SCHEMA_VERSION,
            "run": self.run.to_dict(),
            "summary": self.summary.to_dict(),
            "tasks": {key: r.to_dict() for key, r in self.tasks.items()},
            "prompts": {key: r.prompts for key, r in self.tasks.items() if r.prompts},
        }

    @classmethod
    def from_dict(cls, doc: dict, where: str = "results.json") -> Results:
        """A results document of any schema version; an older or newer one gets one note."""
        if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), dict):
            raise MeraError(f"{where}: not a results.json of this tool (no tasks)")
        version = doc.get("schema_version", 1)
        if version != SCHEMA_VERSION:
            age = "an older" if isinstance(version, int) and version < SCHEMA_VERSION else "a newer"
            print(
                f"mera-multi: note: {where} is of {age} results schema (version {version}; "
                f"this version writes {SCHEMA_VERSION}): read as it is",
                file=sys.stderr,
            )
        tasks, tables = {}, doc.get("prompts")
        tables = tables if isinstance(tables, dict) else {}
        for key, entry in doc["tasks"].items():
            if not isinstance(entry, dict):
                raise MeraError(f"{where}: tasks.{key} is not a task result")
            tasks[key] = TaskResult.from_dict({"task": key, **entry})
            tasks[key].prompts = tables.get(key) or {}
        return cls(
            RunRecord.from_dict(doc.get("run") or {}),
            Summary.from_dict(doc.get("summary") or {}),
            tasks,
            version,
        )

    @classmethod
    def read(cls, path: str | Path) -> Results:
        """A run's results.json (the folder or the file itself), read through json_read."""
        path = Path(path)
        file = path / "results.json" if path.is_dir() else path
        if not file.is_file():
            raise MeraError(
                f"{path}: no results.json (give a folder written by `mera-multi "
                "evaluate` or `mera-multi score`)"
            )
        try:
            doc = json_read.read_file(file)
        except json_read.JsonReadError as err:
            raise MeraError(f"{file}: not a results.json ({err.reason})") from None
        except OSError as err:
            raise MeraError(f"{file}: cannot be read ({err.strerror})") from None
        results = cls.from_dict(doc, str(file))
        results.folder = str(file.parent)
        return results
