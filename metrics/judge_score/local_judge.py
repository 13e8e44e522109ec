"""The judge as a transformers sequence classifier run in this process (`LocalJudge`);
the input protocol it follows is :mod:`mera_multi_hf.judge.judges`."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from .errors import MeraError
from .judges import DEFAULT_JUDGE, TRUNCATE_PROMPT_TOKENS, WINDOW_TOKENS, Judge


class LocalJudge(Judge):
    """A transformers sequence classifier run in this process.

    Texts are tokenized with [CLS]/[SEP] added and, like vLLM's
    `truncate_prompt_tokens`, truncated on the left to the model's limit, so that a
    local and a served judge see the same tokens.
    """

    def __init__(
        self,
        model: str = DEFAULT_JUDGE,
        device: str | None = None,
        batch_size: int = 16,
        window: int = WINDOW_TOKENS,
        max_tokens: int = TRUNCATE_PROMPT_TOKENS,
        revision: str | None = None,
    ):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.model_id = str(model)
        self.revision = revision
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.batch_size = max(1, int(batch_size))
        self.window = int(window)
        if (
            self.model_id.startswith((".", "/", "~"))
            and not Path(self.model_id).expanduser().is_dir()
        ):
            raise MeraError(
                f"the judge model folder {self.model_id} does not exist: pass a folder "
                f"saved with save_pretrained, or a Hub id (official: {DEFAULT_JUDGE})"
            )
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_id, revision=revision)
            self.model = (
                AutoModelForSequenceClassification.from_pretrained(self.model_id, revision=revision)
                .to(self.device)
                .eval()
            )
        except (OSError, ValueError) as err:
            raise MeraError(
                f"could not load the judge model {self.model_id!r}: {str(err).rstrip('.')}. "
                "Pass a local folder "
                f"saved with save_pretrained, or a Hub id you can download (official: "
                f"{DEFAULT_JUDGE})"
            ) from None
        if self.tokenizer.sep_token is None:
            raise MeraError(
                f"the judge tokenizer of {self.model_id!r} has no sep_token: the "
                "judge input needs one (docs/official-protocol.md, 'The judge inputs')"
            )
        self.sep = self.tokenizer.sep_token
        self.tokenizer.truncation_side = "left"
        self.max_tokens = min(int(max_tokens), self._model_limit())
        self._lock = threading.Lock()

    def _model_limit(self) -> int:
        limit = getattr(self.model.config, "max_position_embeddings", None) or 10**9
        if self.model.config.model_type in ("roberta", "xlm-roberta", "camembert"):
            limit -= 2  # their position ids start after the padding index
        tok_limit = self.tokenizer.model_max_length
        return min(limit, tok_limit) if tok_limit and tok_limit < 10**7 else limit

    def id2label(self, index: int) -> str:
        return str(self.model.config.id2label.get(index, index))

    def probs(self, texts: list[str], truncate: int | None = None) -> list[list[float]]:
        """Class probabilities per text, in input order (batched by length for speed)."""
        import torch

        max_len = min(int(truncate), self.max_tokens) if truncate else self.max_tokens
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list = [None] * len(texts)
        with self._lock, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                enc = self.tokenizer(
                    [texts[i] for i in chunk],
                    padding=True,
                    truncation=True,
                    max_length=max_len,
                    return_tensors="pt",
                ).to(self.device)
                logits = self.model(**enc).logits.float()
                for i, row in zip(chunk, torch.softmax(logits, dim=-1).cpu().tolist()):
                    out[i] = row
        return out

    def labels(self, texts: list[str]) -> list[int]:
        return [int(np.argmax(p)) for p in self.probs(list(texts))]

    def describe(self) -> dict:
        # a judge that says what it is (the tiny judge: random weights) has it shown
        note = getattr(self.model.config, "mera_multi_note", None)
        return {
            "backend": "local",
            "model": self.model_id,
            "revision": self.revision,
            "sep": self.sep,
            "window": self.window,
            "max_tokens": self.max_tokens,
            **({"note": str(note)} if note else {}),
        }
