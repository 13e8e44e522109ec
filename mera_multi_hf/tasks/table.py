"""The MERA Multi task registry: every task declared once, as data.

Everything else (builders, loading, prompts, the runner, scoring, the submission
and the dataset cards) reads these declarations; nothing restates them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.tasks.citation import CITATION  # noqa: F401 - cards, builders and metric modules show it
from mera_multi_hf.tasks.ruslun_rules import RUSLUN_FILTERS, RUSLUN_METRICS

LETTERS = "ABCDEFGHIJ"


def _options(n: int) -> tuple[str, ...]:
    return tuple(f"option_{c}" for c in "abcdefghij"[:n])


# Generation as the official harness runs every MERA Multi task (no task YAML sets
# generation_kwargs): greedy, at most 256 new tokens, stop at the few-shot delimiter.
DEFAULT_MAX_NEW_TOKENS = 256
DEFAULT_STOP = ("\n\n",)

# Judge metrics (JS) are computed only with a judge; they are not among the metrics of
# the task metadata (EM / group EM / intent EM / slot F1), but the leaderboard ranks most
# tasks by EM and JS together (LEADERBOARD_METRICS), and so does the task score.
JUDGE_METRICS = ("judge_score",)
GROUPED_JUDGE_METRICS = ("judge_score", "group_judge_score")

# The metrics the MERA leaderboard ranks a task by (the MERA README's task table: EM and
# JS, ruHHH group_EM and group_JS, ruSLUn EM and F1); the task score is the mean of
# those computed, every other metric is supplementary (docs/official-protocol.md).
LEADERBOARD_METRICS = ("exact_match", "judge_score")


# The Hub's task categories of each modality: dataset cards and model-index blocks.
HF_TASK_CATEGORIES = {
    "image": ("visual-question-answering", "image-text-to-text"),
    "audio": ("audio-text-to-text",),
    "video": ("video-text-to-text",),
}

# The modules each modality's media decoding imports, and the pyproject extra that
# installs them (the preflight checks them before a build or a run).
MODALITY_EXTRAS = {
    "image": ("", ("PIL",)),
    "audio": ("audio", ("soundfile", "scipy.signal")),
    "video": ("video", ("av",)),
}


@dataclass(frozen=True)
class DialogueSpec:
    """ruTiE: questions asked in order within a dialogue, the last N earlier turns as
    context (the official ruTiEContextFormer with --apply_chat_template
    --fewshot_as_multiturn, the README's recommended run): each earlier turn is a user
    message holding that question's instruction as stored and its media, then an
    assistant message with the model's own earlier answer reduced to a letter."""

    context_turns: int = 5  # N: the README recommends --num_fewshot 5
    answer_pattern: str = r"\b([A-D])\b"  # an earlier answer reduced to its letter
    no_answer: str = "-1"  # what stands for an earlier answer with no letter
    # process_docs places every example by its meta.id alone (RUTIE_END_QUESTION_ID + 1)
    questions_per_dialogue: int = 500
    # the official packer's doc_to_id: question_id + 500 * dialog_id + 11
    submission_id_base: int = 11

    def position(self, example_id: int, first_id: int) -> tuple[int, int]:
        """(dialog id, question id) of an example, from its id and the split's smallest
        id, as the official process_docs derives them (meta's own values are ignored)."""
        return divmod(example_id - first_id, self.questions_per_dialogue)

    def submission_id(self, dialog_id: int, question_id: int) -> int:
        """The id the official packer writes for a position (docs/official-protocol.md,
        "Submission ids")."""
        return question_id + self.questions_per_dialogue * dialog_id + self.submission_id_base


@dataclass(frozen=True)
class TaskSpec:
    """Everything task-specific, as data. Every stage reads these fields; none branches
    on a task's name."""

    key: str  # the name users type: ruhhh_image
    hub_id: str  # the official dataset on the Hub
    class_name: str  # file name stem inside the submission ZIP
    modality: str  # image | audio | video
    media_fields: tuple[str, ...]  # inputs that hold media, in placeholder order
    text_fields: tuple[str, ...]  # inputs that fill the instruction's {placeholders}
    answer_kind: str  # letter | free | json (the gold's type: str, list of str, object)
    metrics: tuple[str, ...]  # the official metrics (task metadata), in report order
    em_mode: str = "mera"  # exact-match normalisation: mera | strict
    choices: tuple[str, ...] = ()  # allowed gold answers for letter tasks
    public: bool = False  # test answers published (scorable locally)
    test_size: int = 0  # examples in the official test split
    domains: tuple[str, ...] = ()  # Hub configs of domain-split tasks
    optional_media: tuple[str, ...] = ()  # media fields that may be empty
    # text inputs an example may leave out (UniScienceVQA's options on a short-answer
    # question): absent, they stay None and print as "None", as the official doc_to_text does
    optional_text: tuple[str, ...] = ()
    gold_list: bool = False  # outputs is a list of acceptable answers (ruCommonVQA)
    dialogue: DialogueSpec | None = None  # ruTiE: earlier turns go into the context
    judge_metrics: tuple[str, ...] = JUDGE_METRICS  # computed only when a judge is given
    # report breakdowns: (name, dotted path into meta), e.g. ("category", "categories.category")
    breakdowns: tuple[tuple[str, str], ...] = ()
    # prompt rules applied to the instruction before formatting (mera_multi_hf.tasks.prompts.RULES)
    prompt_rules: tuple[str, ...] = ()
    # media placeholder rewrites in the rendered prompt, e.g. ("<audio_1>", "<audio>")
    placeholder_rewrites: tuple[tuple[str, str], ...] = ()
    score_filters: tuple[
        str, ...
    ] = ()  # prediction filters before scoring (mera_multi_hf.scoring.filters)
    submit_filters: tuple[str, ...] = ()  # prediction filters before the submission file
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    stop: tuple[str, ...] = DEFAULT_STOP
    human_baseline: dict = field(default_factory=dict)  # metric -> the human score
    harness_name: str = ""  # the task's name in the official harness (default: key)
    leaderboard: tuple[str, ...] = LEADERBOARD_METRICS  # what the leaderboard ranks it by
    # the local number only estimates the official one (ruTiE: the site scores it)
    local_estimate: bool = False
    builder: str = ""  # its builder module file (default: mera_multi_hf/data/builders/<key>.py)
    # the unit resampled together for intervals: example | group | dialogue (dependent examples)
    cluster_by: str = "example"
    # the examples of a group are pairs of one item's ranked answers (ranking diagnostics)
    pairwise_ranking: bool = False
    # the inputs whose values together make a group (same media bytes and same text: one
    # group, its id the first example's id) when the raw data gives no group_id; empty: no groups
    group_by: tuple[str, ...] = ()
    # its raw sample folder, for a task declared outside the package (default: the
    # package's samples/<dataset name>, written by sample_data/<key>.py)
    sample: str = ""

    def __post_init__(self):
        unknown = set(self.group_by) - set(self.media_fields) - set(self.text_fields)
        if unknown or (("group_exact_match" in self.metrics) != bool(self.group_by)):
            raise MeraError(
                f"task {self.key}: group_by must name its inputs, and is given "
                "exactly when its metrics include group_exact_match"
            )

    @property
    def harness_names(self) -> tuple[str, ...]:
        """Names the official harness logs this task under (domain and variant tasks
        add a suffix: runaturalsciencevqa_biology, rutie_vision_gen)."""
        return (self.harness_name or self.key,)

    @property
    def has_groups(self) -> bool:
        return bool(self.group_by)

    @property
    def dataset_name(self) -> str:
        """The official dataset's name (its Hub id without the owner): ruHHH-Image."""
        return self.hub_id.rsplit("/", 1)[-1]

    @property
    def option_fields(self) -> tuple[str, ...]:
        """The text inputs that hold the lettered options (option_a, option_b, ...)."""
        return tuple(f for f in self.text_fields if f.startswith("option_"))

    @property
    def hf_task_categories(self) -> tuple[str, ...]:
        """The Hub's task categories for this task's modality (cards, model-index)."""
        return HF_TASK_CATEGORIES[self.modality]


def _letter(key, hub, cls, modality, media, n_options, *, question=True, extra=(), **kw):
    text = (("question",) if question else ()) + tuple(extra) + _options(n_options)
    kw.setdefault("metrics", ("exact_match",))
    kw.setdefault("choices", tuple(LETTERS[:n_options]))
    return TaskSpec(key, f"MERA-evaluation/{hub}", cls, modality, media, text, "letter", **kw)


def _free(key, hub, cls, modality, media, *, question=True, extra=(), **kw):
    kw.setdefault("metrics", ("exact_match",))
    text = (("question",) if question else ()) + tuple(extra)
    return TaskSpec(key, f"MERA-evaluation/{hub}", cls, modality, media, text, "free", **kw)


_GROUPED = dict(
    metrics=("exact_match", "group_exact_match"),
    judge_metrics=GROUPED_JUDGE_METRICS,
    leaderboard=("group_exact_match", "group_judge_score"),
    cluster_by="group",
)
_ETHICS = (("category", "categories.category"), ("subcategory", "categories.subcategory"))
_DOMAIN = (("domain", "domain"),)
_SCHOOL = ("biology", "chemistry", "physics", "earth_science")

# ruTiE's generate variant (custom_generate_task.yaml): leading whitespace off, first answer.
_RUTIE_FILTERS = ("remove_whitespace", "take_first")
# rutie_*_gen.yaml doc_to_text: braces literal except the fields, the result stripped.
_RUTIE_PROMPT = ("escape_braces_except_fields", "strip")
# ruTiE gold letters: Latin A-D, and Cyrillic А-Г where the official data writes them ("Б").
_RUTIE_CHOICES = tuple("ABCD") + tuple("АБВГ")
# custom_generate_task.yaml: strict EM (no ignore_case, ignore_punctuation false); the
# official target is a placeholder the site fills, so a local number is an estimate.
_RUTIE_SCORING = dict(em_mode="strict", local_estimate=True)

TASKS: dict[str, TaskSpec] = {
    t.key: t
    for t in [
        _letter(
            "ruhhh_image",
            "ruHHH-Image",
            "ruHHH_Image",
            "image",
            ("image",),
            2,
            **_GROUPED,
            group_by=("image", "question"),
            breakdowns=_ETHICS,
            test_size=595,
            pairwise_ranking=True,
            human_baseline={"exact_match": 0.9529, "group_exact_match": 0.893},
        ),
        _letter(
            "ruhhh_video",
            "ruHHH-Video",
            "ruHHH_Video",
            "video",
            ("video",),
            2,
            **_GROUPED,
            group_by=("video", "question"),
            breakdowns=_ETHICS[:1],
            em_mode="strict",
            test_size=911,
            pairwise_ranking=True,
            human_baseline={"exact_match": 0.9385, "group_exact_match": 0.8442},
        ),
        _free(
            "rucommonvqa",
            "ruCommonVQA",
            "ruCommonVQA",
            "image",
            ("image",),
            gold_list=True,
            public=True,
            test_size=3015,
            human_baseline={"exact_match": 0.818},
        ),
        _free(
            "ruclevr",
            "ruCLEVR",
            "ruCLEVR",
            "image",
            ("image",),
            public=True,
            test_size=1148,
            human_baseline={"exact_match": 0.9608},
        ),
        _letter(
            "weird",
            "WEIRD",
            "WEIRD",
            "image",
            ("image",),
            2,
            public=True,
            test_size=814,
            human_baseline={"exact_match": 0.8464},
        ),
        _letter(
            "runaturalsciencevqa",
            "ruNaturalScienceVQA",
            "ruNaturalScienceVQA",
            "image",
            ("image",),
            4,
            extra=("context",),
            public=True,
            test_size=363,
            domains=_SCHOOL,
            breakdowns=_DOMAIN,
            human_baseline={"exact_match": 0.938},
        ),
        _letter(
            "labtabvqa",
            "LabTabVQA",
            "LabTabVQA",
            "image",
            ("image",),
            7,
            test_size=339,
            human_baseline={"exact_match": 0.9086},
        ),
        _free(
            "realvqa",
            "RealVQA",
            "RealVQA",
            "image",
            ("image",),
            test_size=773,
            human_baseline={"exact_match": 0.5834},
        ),
        _free(
            "rumathvqa",
            "ruMathVQA",
            "ruMathVQA",
            "image",
            ("image",),
            question=False,
            extra=("annotation",),
            test_size=502,
            human_baseline={"exact_match": 0.9311},
        ),
        _letter(
            "rutie_image",
            "ruTiE-Image",
            "ruTiE_Image",
            "image",
            ("image",),
            4,
            harness_name="rutie_vision",
            choices=_RUTIE_CHOICES,
            dialogue=DialogueSpec(),
            prompt_rules=_RUTIE_PROMPT,
            score_filters=_RUTIE_FILTERS,
            submit_filters=_RUTIE_FILTERS,
            test_size=1500,
            human_baseline={"exact_match": 0.552},
            **_RUTIE_SCORING,
            cluster_by="dialogue",
        ),
        _letter(
            "schoolsciencevqa",
            "SchoolScienceVQA",
            "SchoolScienceVQA",
            "image",
            ("image",),
            4,
            extra=("context",),
            test_size=4227,
            domains=_SCHOOL + ("history_all", "history_ru", "economics"),
            breakdowns=_DOMAIN,
            human_baseline={"exact_match": 0.4804},
        ),
        _free(
            "unisciencevqa",
            "UniScienceVQA",
            "UniScienceVQA",
            "image",
            ("image",),
            extra=("annotation",) + _options(10),
            optional_text=_options(10),
            test_size=7432,
            domains=(
                "Applied_Sciences",
                "Business",
                "Cultural_Studies",
                "Fundamental_Sciences",
                "Health_and_Medicine",
                "Social_Sciences",
            ),
            breakdowns=_DOMAIN,
            human_baseline={"exact_match": 0.1259},
        ),
        _letter(
            "ruenvaqa",
            "ruEnvAQA",
            "ruEnvAQA",
            "audio",
            ("audio",),
            4,
            public=True,
            test_size=596,
            human_baseline={"exact_match": 0.9497},
        ),
        TaskSpec(
            "ruslun",
            "MERA-evaluation/ruSLUn",
            "ruSLUn",
            "audio",
            ("audio",),
            ("question", "annotation"),
            "json",
            RUSLUN_METRICS,
            judge_metrics=(),
            leaderboard=RUSLUN_METRICS,
            score_filters=RUSLUN_FILTERS,
            submit_filters=RUSLUN_FILTERS,
            public=True,
            test_size=741,
            human_baseline={"intent_exact_match": 0.9069, "slot_f1": 0.305},
        ),
        _letter(
            "aquaria",
            "AQUARIA",
            "AQUARIA",
            "audio",
            ("audio_1", "audio_2"),
            4,
            optional_media=("audio_2",),
            placeholder_rewrites=(("<audio_1>", "<audio>"), ("<audio_2>", "<audio>")),
            test_size=738,
            human_baseline={"exact_match": 0.9766},
        ),
        _letter(
            "rutie_audio",
            "ruTiE-Audio",
            "ruTiE_Audio",
            "audio",
            ("audio",),
            4,
            question=False,
            choices=_RUTIE_CHOICES,
            dialogue=DialogueSpec(),
            prompt_rules=_RUTIE_PROMPT,
            score_filters=_RUTIE_FILTERS,
            submit_filters=_RUTIE_FILTERS,
            test_size=1500,
            human_baseline={"exact_match": 0.446},
            **_RUTIE_SCORING,
            cluster_by="dialogue",
        ),
        _letter(
            "commonvideoqa",
            "CommonVideoQA",
            "CommonVideoQA",
            "video",
            ("video",),
            4,
            em_mode="strict",
            public=True,
            test_size=1200,
            human_baseline={"exact_match": 0.9575},
        ),
        _letter(
            "realvideoqa",
            "RealVideoQA",
            "RealVideoQA",
            "video",
            ("video",),
            4,
            em_mode="strict",
            test_size=671,
            human_baseline={"exact_match": 0.9583},
        ),
    ]
}

MODALITIES = ("image", "audio", "video")


def register_task(task: TaskSpec) -> TaskSpec:
    """Add a task declaration (a new task needs this, a builder and a raw folder)."""
    if task.key in TASKS and TASKS[task.key] != task:
        raise MeraError(f"a different task {task.key!r} is already registered")
    TASKS[task.key] = task
    return task


# Tasks declared outside this file: the modules that declare them (each calls
# register_task), comma-separated, as .py files or importable module names. The command
# line imports them before it runs (README, "Add a task").
TASK_MODULES_VARIABLE = "MERA_MULTI_TASKS"


def import_task_modules() -> None:
    """Import the task declaration modules that ``$MERA_MULTI_TASKS`` names (each once
    per process)."""
    import hashlib
    import importlib
    import os
    from pathlib import Path

    from mera_multi_hf.core.paths import load_module_from_file

    named = os.environ.get(TASK_MODULES_VARIABLE, "")
    for entry in filter(None, (e.strip() for e in named.split(","))):
        if entry.endswith(".py"):
            path = Path(entry).resolve()
            if not path.is_file():
                raise MeraError(f"{TASK_MODULES_VARIABLE}: the task module {entry} does not exist")
            tag = hashlib.sha1(str(path).encode()).hexdigest()[:12]
            load_module_from_file(path, f"mera_multi_hf._task_modules.{path.stem}_{tag}")
            continue
        try:
            importlib.import_module(entry)
        except ModuleNotFoundError as err:
            if err.name is None or not f"{entry}.".startswith(f"{err.name}."):
                raise  # the module itself imports something missing
            raise MeraError(
                f"{TASK_MODULES_VARIABLE}: cannot import the task module "
                f"{entry} (no module {err.name})"
            ) from None


def get_task(key: str) -> TaskSpec:
    """The declaration of one task, by key (case-insensitive; class names work too)."""
    if not isinstance(key, str):
        raise TypeError(
            f"a task is named by its key, a string such as 'ruhhh_image' "
            f"(see `mera-multi tasks`), not {type(key).__name__}"
        )
    import difflib

    wanted = key.strip().lower().replace("-", "_")
    for task in TASKS.values():
        if wanted in (task.key, task.class_name.lower()):
            return task
    near = difflib.get_close_matches(wanted, list(TASKS), n=1, cutoff=0.6)
    hint = f" (did you mean {near[0]}?)" if near else ""
    raise MeraError(f"unknown task {key!r}{hint}. Known tasks: {', '.join(TASKS)}")


def resolve_tasks(names: str | list[str]) -> list[TaskSpec]:
    """Task names, modalities ("image") or "all", comma-separated, to declarations."""
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    chosen: list[TaskSpec] = []
    for name in names:
        name = name.strip()
        if name == "all":
            picked = list(TASKS.values())
        elif name in MODALITIES:
            picked = [t for t in TASKS.values() if t.modality == name]
        else:
            try:
                picked = [get_task(name)]
            except MeraError as err:
                raise MeraError(f"{err}; or a modality ({', '.join(MODALITIES)}), or all") from None
        chosen += [t for t in picked if t not in chosen]
    return chosen
