"""MERA Multi exact match: the official EM of the benchmark's image, audio and video tasks.

A thin `evaluate` wrapper: the formula lives in `mera_multi_hf.metric_fns`.
"""
import datasets
import evaluate

from mera_multi_hf.metric_fns import exact_match_scores
from mera_multi_hf.metric_fns import extract_answer
from mera_multi_hf.metric_fns import mean_score
from mera_multi_hf.metric_fns import require_examples
from mera_multi_hf.metric_fns import warn_if_squad_on_letters
from mera_multi_hf.tasks import get_task
from mera_multi_hf.tasks import CITATION as _CITATION


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
    mode (`str`, optional): `mera`, `strict` or `squad`. Default: the task's mode when
        `task` is given, else `mera`.
    extract (`bool`, optional): also report `exact_match_extracted`. Default False.
    choices (`list` of `str`, optional): the task's option letters, used by the extraction
        to map Cyrillic look-alike letters. Default: the task's letters when `task` is given.
    answer_kind (`str`, optional): `letter`, `free` or `json`; `squad` on `letter` warns.
    task (`str`, optional): a MERA Multi task key (e.g. `ruhhh_image`) whose declared mode,
        answer kind and choices fill the defaults above.

Returns:
    exact_match (`float`): the official EM, in [0, 1].
    exact_match_extracted (`float`): only with `extract=True`: EM after answer extraction.

Examples:
    >>> from mera_multi_hf import load_metric
    >>> exact_match = load_metric("exact_match")
    >>> exact_match.compute(predictions=["a", "B.", "Ответ: C"], references=["A", "B", "C"])
    {'exact_match': 0.6666666666666666}

    >>> exact_match.compute(predictions=["a", "B"], references=["A", "B"], mode="strict")
    {'exact_match': 0.5}

    >>> exact_match.compute(predictions=["Ответ: C", "D"], references=["C", "C"], extract=True)
    {'exact_match': 0.0, 'exact_match_extracted': 0.5}

    >>> exact_match.compute(predictions=["кошка"], references=[["кот", "Кошка"]])
    {'exact_match': 1.0}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ExactMatch(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            # A single gold string, or a list of acceptable ones (ruCommonVQA).
            features=[
                datasets.Features({"predictions": datasets.Value("string"),
                                   "references": datasets.Value("string")}),
                datasets.Features({"predictions": datasets.Value("string"),
                                   "references": datasets.Sequence(datasets.Value("string"))}),
            ],
            reference_urls=["https://mera.a-ai.ru/en/multi",
                            "https://github.com/MERA-Evaluation/MERA_MULTIMODAL"],
        )

    def _infer_feature_from_batch(self, batch):
        require_examples(batch)  # evaluate reads the reference type off the first example
        return super()._infer_feature_from_batch(batch)

    def _compute(self, predictions, references, mode=None, extract=False, choices=None,
                 answer_kind=None, task=None):
        if task is not None:
            spec = get_task(task)
            mode = mode or spec.em_mode
            answer_kind = answer_kind or spec.answer_kind
            choices = choices or spec.choices or None
        mode = mode or "mera"
        warn_if_squad_on_letters(mode, answer_kind)
        result = {"exact_match": mean_score(exact_match_scores(predictions, references, mode))}
        if extract:
            extracted = [extract_answer(p, choices) for p in predictions]
            result["exact_match_extracted"] = mean_score(
                exact_match_scores(extracted, references, mode))
        return result
