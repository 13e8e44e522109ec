"""A tiny judge built offline: a random-weight BERT classifier + a WordPiece tokenizer
whose vocabulary comes from a few Russian sentences. It is a real transformers checkpoint (saved
with save_pretrained, loaded with the Auto classes), only small and untrained: its labels
are noise. `mera-multi models --path judge` builds it once into the cache and prints its
folder, for `judge serve --model` and `evaluate --judge` without a network."""

from __future__ import annotations

from pathlib import Path

SENTENCES = [
    "Какого цвета небо на картинке? Ответ: синий.",
    "Выберите лучший ответ: A или B. ОТВЕТ: B",
    "Кошка сидит на подоконнике и смотрит на улицу.",
    "Правильный ответ не совпадает с эталоном, потому что модель ошиблась.",
    "В комнате три красных куба и один зелёный шар.",
    "Сколько предметов изображено? Ответ: четыре.",
    "Модель ответила неверно, хотя вопрос был простым.",
    "The answer is A because the picture shows a cat.",
    "Звук похож на шум дождя за окном.",
    "Намерение: поставить будильник на семь утра.",
]


# What the judge says of itself (its config.json's `mera_multi_note`, which a LocalJudge's
# describe() records beside its scores and the reports show).
NOTE = "random weights: a plumbing check, its labels are noise"


def build_tiny_judge(
    target: Path, max_positions: int = 512, seed: int = 1, std: float = 0.3
) -> Path:
    tokenizer = _wordpiece_tokenizer(max_positions)
    model = _random_classifier(tokenizer.vocab_size, max_positions, seed, std)
    target = Path(target)  # save_pretrained makes it
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def _wordpiece_tokenizer(max_positions: int):
    """A BERT tokenizer whose WordPiece vocabulary is built from :data:`SENTENCES`."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=False)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # The WordPiece vocabulary is built from the sentences here: whole words plus every
    # character (word-initial and "##" continuation). WordPieceTrainer would also do, but
    # its tie-breaking differs from run to run and the test labels must not.
    words = {
        w
        for text in SENTENCES
        for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))
    }
    chars = {c for w in words for c in w}
    pieces = sorted(words | chars | {"##" + c for c in chars})
    vocab = {tok: i for i, tok in enumerate(specials + pieces)}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.WordPiece()
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return BertTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        model_max_length=max_positions,
    )


def _random_classifier(vocab_size: int, max_positions: int, seed: int, std: float):
    """A 2-layer BERT classifier (incorrect / correct) with seeded random weights."""
    import numpy as np
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max_positions,
        num_labels=2,
        id2label={0: "incorrect", 1: "correct"},
        label2id={"incorrect": 0, "correct": 1},
        mera_multi_note=NOTE,
    )
    model = BertForSequenceClassification(config).eval()
    # Weights from numpy's seeded generator (stable across torch versions), wider than
    # BERT's default init so that the untrained labels vary with the text.
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() >= 2:
                param.copy_(torch.from_numpy(rng.normal(0.0, std, tuple(param.shape))))
    return model
