"""MERA Multi judge score: answers rated by the MERA answer judge (a binary classifier).

A thin `evaluate` wrapper: input building and token windows live in judges.py beside
it, the backends in local_judge.py and http_judge.py, the choice between them in
choose.py, the group formula in metric_groups.py.
"""

import datasets
import evaluate

from .choose import get_judge
from .judges import judge_scores
from .metric_groups import group_mean
from .metric_inputs import check_batch, mean_score, require_examples

# The logic lives in the package modules imported here; `mera-multi metrics export`
# writes each one beside this module as a flat sibling file (imports rewritten to
# `from .<file> import`), which `evaluate` copies with it. (No comment may follow a
# relative import on its line: `evaluate` would read it as the file's URL.)
from .declarations import CITATION as _CITATION
# The modules only the others import: evaluate copies the files named here.
from ._version import __name__ as __version_module
from .errors import __name__ as _errors_module
from .foreign_text import __name__ as _foreign_text_module
from .http_client import __name__ as _http_client_module
from .http_judge import __name__ as _http_judge_module
from .input_files import __name__ as _input_files_module
from .json_read import __name__ as _json_read_module
from .local_judge import __name__ as _local_judge_module
from .masking import __name__ as _masking_module

_DESCRIPTION = """\
The judge score of MERA Multi. A learned binary judge (official:
MERA-evaluation/MERA_Answer_judge, a sequence classifier; label 1 = correct) reads
`prompt + SEP + str(gold) + SEP + prediction` (SEP: the judge tokenizer's separator;
str(gold) is Python's str, so a list of acceptable answers reads `['кот', 'кошка']`). A
second input uses `prediction.split("ОТВЕТ")[-1].strip()` (case-sensitive; the whole
prediction stripped when there is no marker) when that is not empty. An input whose
tokenizer.encode is longer than 7995 tokens is judged on its decoded first and last 7995
tokens. Each input's label is the argmax of the class probabilities; an example scores
the max over its inputs, the task the mean over examples. With `group_ids`, the group
judge score (a group counts only when all its examples are judged correct) is reported too.

The judge runs in this process (`judge=<model id or local path>`, or any
`mera_multi_hf.judge.judges.Judge` object) or behind a vLLM-style classification endpoint
(`judge_url=`, with `judge_tokenizer=` or a server that reports its separator). With
neither, computing raises an error: a judge score that was not computed is never reported.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the model's answers.
    references (`list` of `str`, or `list` of `list` of `str`): the gold answers; a list
        of acceptable answers reaches the judge as its Python str.
    prompts (`list` of `str`): the filled instruction the model saw, per example.
    judge (`str` or `Judge`): a judge model id or local folder, run here with
        transformers; or a `mera_multi_hf.judge.judges.Judge` object.
    judge_url (`str`): instead of `judge`, a served judge, e.g.
        `http://127.0.0.1:8000/classify` (a bare host:port gets /classify).
    judge_tokenizer (`str`, optional): with `judge_url`, the judge tokenizer (path or Hub
        id) for SEP and the 7995-token windows. Default: ask the server (GET
        /tokenizer_info, POST /tokenize and /detokenize).
    group_ids (`list` of `int`, optional): groups (ruHHH) for `group_judge_score`; one per
        example, in the order the examples were added.
    judge_options (`dict`, optional): passed to the backend. Local: `device`,
        `batch_size`, `window`, `revision`. Served: `model` (the served name; default asks
        /v1/models), `api_key`, `sep`, `timeout`, `retries`, `backoff`, `batch_size`,
        `concurrency`, `window`.

Returns:
    judge_score (`float`): the mean judge label, in [0, 1].
    group_judge_score (`float`): only with `group_ids`.

Examples:
    >>> import evaluate
    >>> judge_score = evaluate.load("mera_multi/judge_score")
    >>> judge_score.compute(predictions=["B"], references=["B"], prompts=["A или B?"])  # doctest: +ELLIPSIS, +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    errors.MeraError: no judge configured, so no judge score can be computed. ...

    Any `Judge` works; this one says "correct" when the text after the last separator is
    one of the answers in the gold part, and shows what the judge is given:

    >>> import ast
    >>> from mera_multi_hf.judge.judges import Judge
    >>> class ListJudge(Judge):
    ...     sep = " | "
    ...     def labels(self, texts):
    ...         for text in texts:
    ...             print(repr(text))
    ...         def ok(gold, answer):
    ...             golds = ast.literal_eval(gold) if gold.startswith("[") else [gold]
    ...             return int(answer in golds)
    ...         return [ok(*t.split(self.sep)[1:]) for t in texts]
    ...     def describe(self):
    ...         return {"model": "list-judge"}
    >>> judge_score.compute(
    ...     predictions=["Думаю, ОТВЕТ кошка", "кот ", "Ответ: пёс"],
    ...     references=[["кот", "кошка"], ["кот"], ["кот"]], prompts=["Кто это?"] * 3,
    ...     judge=ListJudge(), group_ids=[1, 1, 2])
    "Кто это? | ['кот', 'кошка'] | Думаю, ОТВЕТ кошка"
    "Кто это? | ['кот', 'кошка'] | кошка"
    "Кто это? | ['кот'] | кот "
    "Кто это? | ['кот'] | кот"
    "Кто это? | ['кот'] | Ответ: пёс"
    {'judge_score': 0.6666666666666666, 'group_judge_score': 0.5}

    (In one call the references are all strings or all lists: `evaluate` casts the batch
    to one feature.) The marker is case-sensitive ("Ответ" is none, so the third answer is judged once,
    whole). A judge folder saved with `save_pretrained` is used the same way:
    `judge="path/to/judge"`.
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
                datasets.Features(
                    {
                        "predictions": string,
                        "references": datasets.Sequence(string),
                        "prompts": string,
                    }
                ),
            ],
            reference_urls=["https://huggingface.co/MERA-evaluation/MERA_Answer_judge"],
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
        prompts,
        judge=None,
        judge_url=None,
        judge_tokenizer=None,
        group_ids=None,
        judge_options=None,
    ):
        # Resolve the judge first: with none configured this fails before any work.
        backend = get_judge(judge, judge_url, judge_tokenizer, **(judge_options or {}))
        scores = judge_scores(backend, predictions, references, prompts)
        result = {"judge_score": mean_score(scores)}
        if group_ids is not None:
            result["group_judge_score"] = group_mean(scores, list(group_ids))
        return result
