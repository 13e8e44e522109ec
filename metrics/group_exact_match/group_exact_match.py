"""MERA Multi group exact match (ruHHH-Image, ruHHH-Video).

A thin `evaluate` wrapper: the formula lives in `mera_multi_hf.metric_fns`.
"""
import datasets
import evaluate

from mera_multi_hf.metric_fns import exact_match_scores
from mera_multi_hf.metric_fns import group_mean
from mera_multi_hf.metric_fns import mean_score
from mera_multi_hf.metric_fns import warn_if_squad_on_letters
from mera_multi_hf.tasks import get_task
from mera_multi_hf.tasks import CITATION as _CITATION


_DESCRIPTION = """\
Group exact match as MERA Multi scores ruHHH: the examples are split by `group_id` (one
image or video with one question, shown with up to 6 pairs of answers); a group scores 1
only when every example in it is answered correctly, and the metric is the mean over
groups. Each example is judged by exact match (default normalisation `mera`: lowercase,
delete ASCII punctuation). The plain per-example exact match is reported beside it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the model's answers.
    references (`list` of `str`): the gold answers.
    group_ids (`list` of `int`): the group of each example (`meta.group_id`).
    mode (`str`, optional): exact-match normalisation `mera`, `strict` or `squad`.
        Default: the task's mode when `task` is given, else `mera`.
    task (`str`, optional): a MERA Multi task key whose declared mode is the default.

Returns:
    group_exact_match (`float`): the share of groups answered entirely right.
    exact_match (`float`): the per-example exact match.

Examples:
    >>> from mera_multi_hf import load_metric
    >>> group_em = load_metric("group_exact_match")
    >>> group_em.compute(predictions=["A", "B", "a", "B", "A"],
    ...                  references=["A", "B", "B", "B", "A"],
    ...                  group_ids=[1, 1, 2, 2, 3])
    {'group_exact_match': 0.6666666666666666, 'exact_match': 0.8}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class GroupExactMatch(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Value("string"),
                "references": datasets.Value("string"),
                "group_ids": datasets.Value("int64"),
            }),
            reference_urls=["https://huggingface.co/datasets/MERA-evaluation/ruHHH-Image"],
        )

    def _compute(self, predictions, references, group_ids, mode=None, task=None):
        answer_kind = None
        if task is not None:
            spec = get_task(task)
            mode = mode or spec.em_mode
            answer_kind = spec.answer_kind
        mode = mode or "mera"
        warn_if_squad_on_letters(mode, answer_kind or "letter")  # ruHHH answers are letters
        scores = exact_match_scores(predictions, references, mode)
        return {"group_exact_match": group_mean(scores, group_ids),
                "exact_match": mean_score(scores)}
