"""MERA Multi group exact match (ruHHH-Image, ruHHH-Video).

A thin `evaluate` wrapper: the formula lives in metric_groups.py beside it.
"""

import datasets
import evaluate

from .metric_exact_match import exact_match_scores, warn_if_squad_on_letters
from .metric_groups import group_mean
from .metric_inputs import check_batch, mean_score, task_key, task_options
from .task_options import TASK_OPTIONS

# The logic lives in the package modules imported here; `mera-multi metrics export`
# writes each one beside this module as a flat sibling file (imports rewritten to
# `from .<file> import`), which `evaluate` copies with it. (No comment may follow a
# relative import on its line: `evaluate` would read it as the file's URL.)
from .declarations import CITATION as _CITATION
# The modules only the others import: evaluate copies the files named here.
from .errors import __name__ as _errors_module

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
    task (`str`, optional): a MERA Multi task key, e.g. `ruhhh_video`: mode and
        answer_kind default to the task's. The same as loading with it:
        `evaluate.load(path, "ruhhh_video")` (evaluate's config_name) or
        `evaluate.load(path, task="ruhhh_video")`. An unknown task is a ValueError.
    mode (`str`, optional): exact-match normalisation `mera`, `strict` or `squad`.
        Default: the task's, else `mera`.
    answer_kind (`str`, optional): the answer kind; `squad` on `letter` (the default:
        ruHHH answers are letters) warns.

Returns:
    group_exact_match (`float`): the share of groups answered entirely right.
    exact_match (`float`): the per-example exact match.

Examples:
    >>> import evaluate
    >>> group_em = evaluate.load("mera_multi/group_exact_match")
    >>> group_em.compute(predictions=["A", "B", "a", "B", "A"],
    ...                  references=["A", "B", "B", "B", "A"],
    ...                  group_ids=[1, 1, 2, 2, 3])
    {'group_exact_match': 0.6666666666666666, 'exact_match': 0.8}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class GroupExactMatch(evaluate.Metric):
    def __init__(self, config_name=None, task=None, **kwargs):
        """``config_name`` or ``task``: a task key whose options compute() takes."""
        super().__init__(config_name=task_key(TASK_OPTIONS, config_name, task), **kwargs)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("string"),
                    "references": datasets.Value("string"),
                    "group_ids": datasets.Value("int64"),
                }
            ),
            reference_urls=["https://huggingface.co/datasets/MERA-evaluation/ruHHH-Image"],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch, its inputs checked first (evaluate would split a string into its
        characters, truncate a float group id and report mismatched lengths as Arrow's)."""
        check_batch({"predictions": predictions, "references": references, **kwargs})
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, group_ids, mode=None, answer_kind=None, task=None):
        key = task_key(TASK_OPTIONS, self.config_name, task)
        given = task_options(TASK_OPTIONS, key, mode=mode, answer_kind=answer_kind)
        mode = given["mode"] or "mera"
        warn_if_squad_on_letters(mode, given["answer_kind"] or "letter")  # ruHHH: letters
        scores = exact_match_scores(predictions, references, mode)
        return {
            "group_exact_match": group_mean(scores, group_ids),
            "exact_match": mean_score(scores),
        }
