"""The MERA answer judge: the input protocol (docs/official-protocol.md, "The judge
inputs") and the scoring of examples with any judge.

A judge is a binary sequence classifier (1 = the answer is correct). For one example,
exactly as the official protocol:

- input = prompt + SEP + str(gold) + SEP + prediction, SEP being the judge tokenizer's
  separator token and str(gold) Python's ``str`` of the typed gold (a list of
  acceptable answers gives its repr, ``['кот', 'кошка']``);
- a second input with the prediction replaced by
  ``declarations.official_answer_part(prediction)`` = ``prediction.split("ОТВЕТ")[-1].strip()``
  (case-sensitive; with no marker the whole prediction stripped) when that is not empty;
- an input whose ``tokenizer.encode`` (special tokens included) is longer than 7995
  tokens is judged twice: the decoded first 7995 tokens and the decoded last 7995;
- label = argmax of the class probabilities; example score = max over its inputs;
  task score = mean over examples.

Backends share one interface, `labels(texts) -> list[int]` (the `Judge` class here):

- `LocalJudge` (:mod:`mera_multi_hf.judge.local_judge`): transformers
  `AutoModelForSequenceClassification` in this process;
- `HttpJudge` (:mod:`mera_multi_hf.judge.http_judge`): a served judge, POSTing the official
  harness's request `{"model": ..., "input": text, "truncate_prompt_tokens": 8192}` to a
  vLLM-style classification endpoint (vLLM's `/classify`, or `mera-multi judge serve`).

`get_judge(judge=None, judge_url=None, judge_tokenizer=None)`
(:mod:`mera_multi_hf.judge.choose`) makes either (see there for where a served judge's
separator token and tokenizer come from).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.tasks.declarations import official_answer_part

if TYPE_CHECKING:
    import numpy as np

DEFAULT_JUDGE = "MERA-evaluation/MERA_Answer_judge"
WINDOW_TOKENS = 7995
TRUNCATE_PROMPT_TOKENS = 8192
API_KEY_ENV = "MERA_JUDGE_API_KEY"  # the server's key and the clients': `ps` does not show it


def raw_inputs(prompt: str, gold, prediction: str, sep: str) -> list[str]:
    """The judge texts of one example before token windows (1 or 2).

    >>> raw_inputs("Вопрос?", "синий", "ОТВЕТ: синий", "[SEP]")
    ['Вопрос?[SEP]синий[SEP]ОТВЕТ: синий', 'Вопрос?[SEP]синий[SEP]: синий']
    >>> raw_inputs("Q", ["кот", "кошка"], "кот", "|")
    ["Q|['кот', 'кошка']|кот", "Q|['кот', 'кошка']|кот"]
    """
    gold_text = str(gold)
    texts = [f"{prompt}{sep}{gold_text}{sep}{prediction}"]
    tail = official_answer_part(prediction)
    if tail:
        texts.append(f"{prompt}{sep}{gold_text}{sep}{tail}")
    return texts


def _may_exceed(text: str, window: int) -> bool:
    """False only when ``text`` surely has at most ``window`` tokens: no tokenizer makes
    more than two tokens per UTF-8 byte plus a few special ones."""
    return 2 * len(text.encode("utf-8")) + 8 > window


def token_windows(texts: list[str], tokenizer, window: int = WINDOW_TOKENS) -> list[list[str]]:
    """Each text as itself, or [decoded first `window` tokens, decoded last `window`]
    when its ``tokenizer.encode`` (special tokens included) is longer than `window`.

    A tokenizer that asks the server (``remote = True``) is only asked about texts that
    may be long.
    """
    if window < 1:
        raise MeraError(f"the judge token window must be positive, got {window}")
    todo = [
        i
        for i, t in enumerate(texts)
        if not getattr(tokenizer, "remote", False) or _may_exceed(t, window)
    ]
    out = [[t] for t in texts]
    if not todo:
        return out
    # verbose=False: long texts are the point here, not a mistake to warn about
    ids = tokenizer([texts[i] for i in todo], add_special_tokens=True, verbose=False)["input_ids"]
    for i, toks in zip(todo, ids):
        if len(toks) > window:
            out[i] = [tokenizer.decode(toks[:window]), tokenizer.decode(toks[-window:])]
    return out


class Judge:
    """What the scoring code needs from a judge: `labels(texts)` plus the input protocol."""

    sep: str
    tokenizer = None
    window: int = WINDOW_TOKENS

    def labels(self, texts: list[str]) -> list[int]:
        raise NotImplementedError

    def describe(self) -> dict:
        """What to record beside a judge score so it can be reproduced."""
        raise NotImplementedError

    def inputs(self, prompt: str, gold, prediction: str) -> list[str]:
        """All texts the judge classifies for one example (variants x windows)."""
        return self.inputs_many([prompt], [gold], [prediction])[0]

    def inputs_many(self, prompts, golds, predictions) -> list[list[str]]:
        per_example = [
            raw_inputs(p, g, a, self.sep) for p, g, a in zip(prompts, golds, predictions)
        ]
        if self.tokenizer is None:
            return per_example
        flat = [t for texts in per_example for t in texts]
        windows = iter(token_windows(flat, self.tokenizer, self.window))
        return [[w for _ in texts for w in next(windows)] for texts in per_example]


def judge_scores(
    judge: Judge, predictions: Sequence[str], references: Sequence, prompts: Sequence[str]
) -> np.ndarray:
    """Per-example judge scores (0/1, int8): the max label over each example's inputs."""
    import numpy as np  # here: `mera-multi judge --help` loads this module, never numpy

    predictions, references, prompts = list(predictions), list(references), list(prompts)
    if not (len(predictions) == len(references) == len(prompts)):
        raise MeraError(
            f"judge scoring got {len(predictions)} predictions, {len(references)} "
            f"references and {len(prompts)} prompts: they must pair up one to one"
        )
    for name, column in (("predictions", predictions), ("prompts", prompts)):
        for i, value in enumerate(column):
            if not isinstance(value, str):
                raise MeraError(f"{name}[{i}] is {type(value).__name__}, expected a string")
    if not predictions:
        raise MeraError("no examples to judge: the predictions are empty")
    per_example = judge.inputs_many(prompts, references, predictions)
    owner = np.repeat(np.arange(len(per_example)), [len(t) for t in per_example])
    # A text's label does not depend on who asks: classify each distinct text once (the
    # "ОТВЕТ" input equals the full one whenever the answer carries no marker or spaces).
    flat = [t for texts in per_example for t in texts]
    unique = list(dict.fromkeys(flat))
    found = np.asarray(judge.labels(unique))
    if found.shape != (len(unique),) or not np.isin(found, (0, 1)).all():
        raise MeraError(
            f"the judge {judge.describe().get('model')!r} must return one label "
            f"0 or 1 per input; got {found.tolist()[:10]} for {len(unique)} inputs. "
            "Is it a binary classifier?"
        )
    position = {t: i for i, t in enumerate(unique)}
    labels = found[[position[t] for t in flat]] if flat else found
    scores = np.zeros(len(per_example), dtype=np.int8)
    np.maximum.at(scores, owner, labels.astype(np.int8))
    return scores
