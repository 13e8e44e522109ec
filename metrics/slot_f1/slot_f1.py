"""MERA Multi slot F1 and intent exact match (ruSLUn).

A thin `evaluate` wrapper: the formula lives in metric_ruslun.py beside it.
"""

import datasets
import evaluate

from .metric_inputs import check_batch, mean_score
from .metric_ruslun import ruslun_scores

# The logic lives in the package modules imported here; `mera-multi metrics export`
# writes each one beside this module as a flat sibling file (imports rewritten to
# `from .<file> import`), which `evaluate` copies with it. (No comment may follow a
# relative import on its line: `evaluate` would read it as the file's URL.)
from .declarations import CITATION as _CITATION
# The modules only the others import: evaluate copies the files named here.
from .errors import __name__ as _errors_module
from .filters import __name__ as _filters_module

_DESCRIPTION = """\
Spoken language understanding scores for ruSLUn, exactly as the official
`multimodal_tasks/ruslun` code. The model answers with a JSON object
{"intent": str, "slots": [{slot_type: value}, ...]}.

Each prediction goes through the official filters: lowercased, then cleaned (stripped; a
whole-string code fence unwrapped; surrounding backticks removed; a leading "json"
removed only when followed by ":" or a line break; matching outer quotes unwrapped). It
is then parsed with `json.loads` only; an answer that does not parse, or is not an
object, or whose `slots` is not a list of objects, scores 0 on both metrics. The gold is
`json.loads(outputs.replace("'", '"'))` and is NOT lowercased: a CamelCase gold intent
never matches (official). Intent exact match is 1 when the intents are equal. Slots become
a multiset of (str(slot_type), str(value)) pairs over all dicts in `slots`; with C the
size of the multiset intersection, P = C/|pred|, R = C/|gold|, F1 = 2PR/(P+R) (0 when
P+R = 0), and F1 = 1 when both sides have no slots. Both are means over examples.

`case_insensitive=True` adds a corrected reading beside the official numbers:
`intent_exact_match_ci` and `slot_f1_ci` compare both sides lowercased.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the model's answers as generated (JSON, possibly in a
        code fence); the official filters are applied here.
    references (`list` of `str`): the gold answers as JSON strings (single quotes allowed).
    case_insensitive (`bool`, optional): also report the `*_ci` corrected reading.
        Default False.

Returns:
    slot_f1 (`float`): the mean per-example slot F1.
    intent_exact_match (`float`): the share of examples with the right intent.
    slot_f1_ci, intent_exact_match_ci (`float`): only with `case_insensitive=True`.

Examples:
    >>> import evaluate
    >>> slot_f1 = evaluate.load("mera_multi/slot_f1")
    >>> gold = "{'intent': 'alarm_set', 'slots': [{'time': 'семь утра'}, {'date': 'завтра'}]}"
    >>> slot_f1.compute(
    ...     predictions=['```json\\n{"intent": "alarm_set", "slots": [{"time": "Семь утра"}]}\\n```',
    ...                  'не знаю'],
    ...     references=[gold, gold])
    {'slot_f1': 0.3333333333333333, 'intent_exact_match': 0.5}

    A CamelCase gold intent never matches the lowercased prediction (official); the
    corrected reading is reported beside it:

    >>> slot_f1.compute(predictions=['{"intent": "SetAlarm", "slots": []}'],
    ...                 references=["{'intent': 'SetAlarm', 'slots': []}"], case_insensitive=True)
    {'slot_f1': 1.0, 'intent_exact_match': 0.0, 'slot_f1_ci': 1.0, 'intent_exact_match_ci': 1.0}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SlotF1(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            reference_urls=["https://huggingface.co/datasets/MERA-evaluation/ruSLUn"],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch, its inputs checked first (evaluate would split a string into its
        characters, truncate a float group id and report mismatched lengths as Arrow's)."""
        check_batch({"predictions": predictions, "references": references, **kwargs})
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, case_insensitive=False):
        scores = ruslun_scores(predictions, references, case_insensitive=case_insensitive)
        order = ["slot_f1", "intent_exact_match"]
        if case_insensitive:
            order += ["slot_f1_ci", "intent_exact_match_ci"]
        return {name: mean_score(scores[name]) for name in order}
