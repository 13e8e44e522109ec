"""MERA Multi exact match: the official EM of the benchmark's image, audio and video tasks.

A thin `evaluate` wrapper: the formula lives in metric_exact_match.py beside it.
"""

import datasets
import evaluate

from .metric_exact_match import exact_match_scores, warn_if_squad_on_letters
from .metric_extraction import extract_answer
from .metric_inputs import (
    check_batch,
    mean_score,
    require_examples,
    task_key,
    task_options,
)
from .task_options import TASK_OPTIONS

# The logic lives in the package modules imported here; `mera-multi metrics export`
# writes each one beside this module as a flat sibling file (imports rewritten to
# `from .<file> import`), which `evaluate` copies with it. (No comment may follow a
# relative import on its line: `evaluate` would read it as the file's URL.)
from .declarations import CITATION as _CITATION
# The modules only the others import: evaluate copies the files named here.
from .errors import __name__ as _errors_module

_DESCRIPTION = """\
Exact match (EM) as MERA Multi scores it: each prediction is compared with its gold
answer after a named normalisation, and EM is the mean over examples.

- `mera` (default; image and audio tasks): lowercase both strings and delete every ASCII
  punctuation character (Python's `string.punctuation`); whitespace is kept.
- `strict` (video tasks): compare the strings as they are.
- `squad` (a later official revision, for comparison only): lowercase, delete ASCII
  punctuation, replace the articles a/an/the by a space, collapse whitespace. It maps gold
  "A" to "", so it warns on letter tasks.

There is no answer extraction in the official EM: "Ответ: A" does not match "A". With
`extract=True` a second, separately named number `exact_match_extracted` is reported next
to it (the text after the last "ОТВЕТ" or a lone option letter), never replacing it.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the model's answers.
    references (`list` of `str`, or `list` of `list` of `str`): the gold answers; a list
        holds several acceptable answers and matching any of them counts.
    task (`str`, optional): a MERA Multi task key (`mera-multi tasks` lists them), e.g.
        `commonvideoqa`: mode, answer_kind and choices default to the task's. The same as
        loading with it: `evaluate.load(path, "commonvideoqa")` (evaluate's config_name)
        or `evaluate.load(path, task="commonvideoqa")`. An unknown task is a ValueError.
    mode (`str`, optional): `mera`, `strict` or `squad`. Default: the task's, else `mera`.
    extract (`bool`, optional): also report `exact_match_extracted`. Default False.
    choices (`list` of `str`, optional): the option letters, used by the extraction to map
        Cyrillic look-alike letters. Default: the task's.
    answer_kind (`str`, optional): `letter`, `free` or `json`; `squad` on `letter` warns.
        Default: the task's.

Returns:
    exact_match (`float`): the official EM, in [0, 1].
    exact_match_extracted (`float`): only with `extract=True`: EM after answer extraction.

Examples:
    >>> import evaluate
    >>> exact_match = evaluate.load("mera_multi/exact_match")
    >>> exact_match.compute(predictions=["a", "B.", "Ответ: C"], references=["A", "B", "C"])
    {'exact_match': 0.6666666666666666}

    >>> exact_match.compute(predictions=["a", "B"], references=["A", "B"], mode="strict")
    {'exact_match': 0.5}

    >>> exact_match.compute(predictions=["a", "B"], references=["A", "B"], task="commonvideoqa")
    {'exact_match': 0.5}

    >>> exact_match.compute(predictions=["Ответ: C", "D"], references=["C", "C"], extract=True)
    {'exact_match': 0.0, 'exact_match_extracted': 0.5}

    >>> exact_match.compute(predictions=["кошка"], references=[["кот", "Кошка"]])
    {'exact_match': 1.0}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ExactMatch(evaluate.Metric):
    def __init__(self, config_name=None, task=None, **kwargs):
        """``config_name`` or ``task``: a task key whose options compute() takes."""
        super().__init__(config_name=task_key(TASK_OPTIONS, config_name, task), **kwargs)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            # A single gold string, or a list of acceptable ones (ruCommonVQA).
            features=[
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Value("string"),
                    }
                ),
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Sequence(datasets.Value("string")),
                    }
                ),
            ],
            reference_urls=[
                "https://mera.a-ai.ru/en/multi",
                "https://github.com/MERA-Evaluation/MERA_MULTIMODAL",
            ],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch, its inputs checked first (evaluate would split a string into its
        characters, truncate a float group id and report mismatched lengths as Arrow's)."""
        check_batch({"predictions": predictions, "references": references, **kwargs})
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def _infer_feature_from_batch(self, batch):
        require_examples(batch)  # evaluate reads the reference type off the first example
        return super()._infer_feature_from_batch(batch)

    def _compute(
        self,
        predictions,
        references,
        mode=None,
        extract=False,
        choices=None,
        answer_kind=None,
        task=None,
    ):
        key = task_key(TASK_OPTIONS, self.config_name, task)
        given = task_options(TASK_OPTIONS, key, mode=mode, choices=choices, answer_kind=answer_kind)
        mode, choices = given["mode"] or "mera", given["choices"]
        warn_if_squad_on_letters(mode, given["answer_kind"])
        result = {"exact_match": mean_score(exact_match_scores(predictions, references, mode))}
        if extract:
            extracted = [extract_answer(p, choices) for p in predictions]
            result["exact_match_extracted"] = mean_score(
                exact_match_scores(extracted, references, mode)
            )
        return result
