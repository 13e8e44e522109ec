"""What a task is, as data: :class:`TaskSpec` (every field a stage reads) and ruTiE's
:class:`DialogueSpec`, with the defaults they share (generation, judge and leaderboard
metrics, the Hub's task categories). The 18 tasks themselves are in
:mod:`mera_multi_hf.tasks.table`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mera_multi_hf.core.errors import MeraError

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
    # the breakdown (its name in ``breakdowns``) that a block of the instruction filled per
    # example follows (ruHHH's task context by category): prompt variants are counted within
    # its values (mera_multi_hf.tasks.variants)
    prompt_block: str = ""
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
        if self.prompt_block and self.prompt_block not in dict(self.breakdowns):
            raise MeraError(f"task {self.key}: prompt_block must name one of its breakdowns")

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
