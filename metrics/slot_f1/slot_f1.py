"""MERA Multi slot F1 and intent exact match (ruSLUn).

A thin `evaluate` wrapper: the formula lives in `mera_multi_hf.metric_fns`.
"""
import datasets
import evaluate

from mera_multi_hf.metric_fns import mean_score
from mera_multi_hf.metric_fns import slot_f1_scores
from mera_multi_hf.tasks import CITATION as _CITATION


_DESCRIPTION = """\
Spoken language understanding scores for ruSLUn. The model answers with a JSON object
{"intent": str, "slots": [{slot_type: value}, ...]}.

Each prediction is lowercased; a surrounding code fence or backticks and a leading "json"
are removed; it is parsed as JSON (Python-style single quotes are accepted too). An answer
that does not parse scores 0 on both metrics. Intent exact match is 1 when the intents are
equal. Slots become a multiset of (slot_type, value) pairs over all dicts in `slots`;
with C the size of the multiset intersection, P = C/|pred|, R = C/|gold|,
F1 = 2PR/(P+R) (0 when P+R = 0), and F1 = 1 when both sides have no slots. The gold side
is lowercased too. Both metrics are means over examples (macro).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the model's answers (JSON, possibly in a code fence).
    references (`list` of `str`): the gold answers as JSON strings (single quotes allowed).

Returns:
    slot_f1 (`float`): the mean per-example slot F1.
    intent_exact_match (`float`): the share of examples with the right intent.

Examples:
    >>> from mera_multi_hf import load_metric
    >>> slot_f1 = load_metric("slot_f1")
    >>> gold = "{'intent': 'alarm_set', 'slots': [{'time': 'семь утра'}, {'date': 'завтра'}]}"
    >>> slot_f1.compute(
    ...     predictions=['```json\\n{"intent": "alarm_set", "slots": [{"time": "Семь утра"}]}\\n```',
    ...                  'не знаю'],
    ...     references=[gold, gold])
    {'slot_f1': 0.3333333333333333, 'intent_exact_match': 0.5}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SlotF1(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://huggingface.co/datasets/MERA-evaluation/ruSLUn"],
        )

    def _compute(self, predictions, references):
        intent, f1 = slot_f1_scores(predictions, references)
        return {"slot_f1": mean_score(f1), "intent_exact_match": mean_score(intent)}
