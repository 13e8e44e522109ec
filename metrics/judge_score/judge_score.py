"""MERA Multi judge score: answers rated by the MERA answer judge (a binary classifier).

A thin `evaluate` wrapper: input building, token windows and the backends live in
`mera_multi_hf.judge`, the group formula in `mera_multi_hf.metric_fns`.
"""
import datasets
import evaluate

from mera_multi_hf.judge import get_judge
from mera_multi_hf.judge import judge_scores
from mera_multi_hf.metric_fns import group_mean
from mera_multi_hf.metric_fns import mean_score
from mera_multi_hf.tasks import CITATION as _CITATION


_DESCRIPTION = """\
The judge score of MERA Multi. A learned binary judge (official:
MERA-evaluation/MERA_Answer_judge, a sequence classifier; label 1 = correct) reads
`prompt + SEP + gold + SEP + prediction` (SEP: the judge tokenizer's separator). A second
input uses only the part of the prediction after its last "ОТВЕТ" (any case) when that is
not empty. An input longer than 7995 tokens is judged on its first and its last 7995
tokens. Each input's label is the argmax of the class probabilities; an example scores the
max over its inputs, the task the mean over examples. With `group_ids`, the group judge
score (a group counts only when all its examples are judged correct) is reported too.

The judge runs in this process (`judge=<model id or local path>`) or behind a vLLM-style
classification endpoint (`judge_url=`). With neither, computing raises an error: a judge
score that was not computed is never reported.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the model's answers.
    references (`list` of `str`, or `list` of `list` of `str`): the gold answers; for a list
        of acceptable answers each is judged and the best label counts.
    prompts (`list` of `str`): the filled instruction the model saw, per example.
    judge (`str`): a judge model id or local folder, run here with transformers.
    judge_url (`str`): instead of `judge`, a served judge, e.g.
        `http://127.0.0.1:8000/classify` (a bare host:port gets /classify).
    group_ids (`list` of `int`, optional): groups (ruHHH) for `group_judge_score`; one per
        example, in the order the examples were added.
    judge_options (`dict`, optional): passed to the backend. Local: `device`,
        `batch_size`, `window`, `revision`. Served: `model` (the served name; default asks
        /v1/models), `tokenizer` (path or id of the judge tokenizer, for SEP and the
        7995-token windows), `sep` (the separator when no tokenizer), `timeout`,
        `retries`, `backoff`, `batch_size`, `concurrency`, `window`.

Returns:
    judge_score (`float`): the mean judge label, in [0, 1].
    group_judge_score (`float`): only with `group_ids`.

Examples:
    >>> from mera_multi_hf import load_metric
    >>> judge_score = load_metric("judge_score")
    >>> judge_score.compute(predictions=["B"], references=["B"], prompts=["A или B?"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mera_multi_hf.errors.MeraError: no judge configured, so no judge score can be computed. ...

    A judge is any binary sequence classifier; `judge=` takes its folder or Hub id:

    >>> result = judge_score.compute(  # doctest: +SKIP
    ...     predictions=["Ответ: B", "A"], references=["B", "B"], prompts=["A или B?"] * 2,
    ...     judge="MERA-evaluation/MERA_Answer_judge", group_ids=[1, 1])
    >>> sorted(result)  # doctest: +SKIP
    ['group_judge_score', 'judge_score']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class JudgeScore(evaluate.Metric):
    def _info(self):
        string = datasets.Value("string")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=[
                datasets.Features({"predictions": string, "references": string, "prompts": string}),
                datasets.Features({"predictions": string, "references": datasets.Sequence(string),
                                   "prompts": string}),
            ],
            reference_urls=["https://huggingface.co/MERA-evaluation/MERA_Answer_judge"],
        )

    def _compute(self, predictions, references, prompts, judge=None, judge_url=None,
                 group_ids=None, judge_options=None):
        # Resolve the judge first: with none configured this fails before any work.
        backend = get_judge(judge, judge_url, **(judge_options or {}))
        scores = judge_scores(backend, predictions, references, prompts)
        result = {"judge_score": mean_score(scores)}
        if group_ids is not None:
            result["group_judge_score"] = group_mean(scores, list(group_ids))
        return result
