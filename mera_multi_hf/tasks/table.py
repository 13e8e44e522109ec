"""The MERA Multi task registry: every task declared once, as data (a
:class:`~mera_multi_hf.tasks.spec.TaskSpec` each), and the lookups by name.

Everything else (builders, loading, prompts, the runner, scoring, the submission
and the dataset cards) reads these declarations; nothing restates them.
"""

from __future__ import annotations

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.tasks.declarations import RUSLUN_FILTERS, RUSLUN_METRICS
from mera_multi_hf.tasks.spec import GROUPED_JUDGE_METRICS, DialogueSpec, TaskSpec

LETTERS = "ABCDEFGHIJ"


def _options(n: int) -> tuple[str, ...]:
    return tuple(f"option_{c}" for c in "abcdefghij"[:n])


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
            prompt_block="category",
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
            prompt_block="category",
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

# The modules each modality's media decoding imports, and the pyproject extra that
# installs them (the preflight checks them before a build or a run).
MODALITY_EXTRAS = {
    "image": ("", ("PIL",)),
    "audio": ("audio", ("soundfile", "scipy.signal")),
    "video": ("video", ("av",)),
}


def register_task(task: TaskSpec) -> TaskSpec:
    """Add a task declaration (a new task needs this, a builder and a raw folder)."""
    if task.key in TASKS and TASKS[task.key] != task:
        raise MeraError(f"a different task {task.key!r} is already registered")
    TASKS[task.key] = task
    return task


def get_task(key: str) -> TaskSpec:
    """The declaration of one task, by key (case-insensitive; class names work too)."""
    if not isinstance(key, str):
        raise TypeError(
            f"a task is named by its key, a string such as 'ruhhh_image' "
            f"(see `mera-multi tasks`), not {type(key).__name__}"
        )
    wanted = key.strip().lower().replace("-", "_")
    for task in TASKS.values():
        if wanted in (task.key, task.class_name.lower()):
            return task
    import difflib

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
