"""Train or fine-tune a judge on human-labelled answers (transformers Trainer).

Data: the JSONL format of judge_agreement.py, one {"prompt", "gold", "prediction", "label"} per
line. Each record becomes the judge input of the scoring protocol,
prompt + SEP + str(gold) + SEP + prediction (a list of acceptable answers as its repr),
truncated on the left like the served judge. The result is a folder that `LocalJudge`,
`mera-multi judge serve` and vLLM load like any sequence classifier.

Run:  mera-multi judge train --data train.jsonl --base MERA-evaluation/MERA_Answer_judge --output-dir DIR
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mera_multi_hf.core.arguments import OVERWRITE_HELP, SEED_MAX, Options, opt, output_dir_opt
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.judge import agreement

JUDGE_DATA_HELP = "JSONL with prompt, gold, prediction, label (0/1) per line"


def judge_text(record: dict, sep: str) -> str:
    """The first judge input of the scoring protocol (str(gold): a list gives its repr)."""
    from mera_multi_hf.judge.judges import raw_inputs

    return raw_inputs(record["prompt"], record["gold"], record["prediction"], sep)[0]


@dataclass
class TrainOptions(Options):
    """The options of `judge train` (and of :func:`train`'s keywords)."""

    data: str | None = opt(None, JUDGE_DATA_HELP, required=True, path=True)
    base: str | None = opt(
        None, "the model to start from (folder or Hub id)", required=True, path=True
    )
    out: str | None = output_dir_opt(
        None,
        "folder to save the trained judge into",
        required=True,
    )
    epochs: float = opt(
        1.0, "passes over the data; a fraction stops part way (default: 1.0)", above=0, high=1000
    )
    lr: float = opt(2e-5, "learning rate", above=0, high=1)
    batch_size: int = opt(8, "examples per training step (default: 8)", low=1)
    max_length: int = opt(8192, "tokens per input (left-truncated)", low=1)
    seed: int = opt(
        0, "random seed of the initialisation and the shuffling (default: 0)", low=0, high=SEED_MAX
    )
    device: str | None = opt(
        None, "cpu to force the CPU (default: what the Trainer picks)", choices=("cpu", "cuda")
    )
    overwrite: bool = opt(False, OVERWRITE_HELP)


def train(
    data: str | Path,
    base: str,
    out: str | Path,
    *,
    epochs: float = 1.0,
    learning_rate: float = 2e-5,
    batch_size: int = 8,
    max_length: int = 8192,
    seed: int = 0,
    device: str | None = None,
) -> Path:
    """Fine-tune `base` (a classifier or any encoder; a 2-class head is added) and save to
    `out` (under the tool's ownership rule: see mera_multi_hf.core.outputs). The values
    are checked as `judge train`'s options are (TrainOptions)."""
    options = TrainOptions(
        str(data), base, str(out), epochs, learning_rate, batch_size, max_length, seed, device
    )
    return train_with(options)


def train_with(options: TrainOptions) -> Path:
    """`judge train` with its options: the judge trained and saved into ``options.out``."""
    from mera_multi_hf.core.outputs import OutputFolder

    check_device(options.device)  # before the folder is claimed: nothing written
    folder = OutputFolder(options.out, kind="judge_model", inputs=[options.base, options.data])
    with folder.claim(), folder.staging() as stage:  # before training
        _train_into(
            stage,
            options.data,
            options.base,
            epochs=options.epochs,
            learning_rate=options.lr,
            batch_size=options.batch_size,
            max_length=options.max_length,
            seed=options.seed,
            device=options.device,
        )
        saved = {
            str(f.relative_to(stage / "model")): f
            for f in sorted((stage / "model").rglob("*"))
            if f.is_file()
        }
        folder.write_set(saved, index="config.json")
    return Path(options.out)


def check_device(device: str | None) -> None:
    """--device cuda on a torch without CUDA (a CPU build, no GPU) is refused: the Trainer
    would train on the CPU and save a judge as if nothing had happened."""
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise MeraError(
                "--device cuda: this torch has no usable CUDA device (a CPU build or no "
                "GPU); leave --device out or give cpu"
            )


def _train_into(
    stage: Path, data, base: str, *, epochs, learning_rate, batch_size, max_length, seed, device
) -> None:
    import datasets
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    records = agreement.read_labelled(data)
    try:
        tokenizer = AutoTokenizer.from_pretrained(base)
        model = AutoModelForSequenceClassification.from_pretrained(
            base,
            num_labels=2,
            id2label={0: "incorrect", 1: "correct"},
            label2id={"incorrect": 0, "correct": 1},
        )
    except (OSError, ValueError) as err:
        raise MeraError(f"could not load the base model {base!r}: {err}") from None
    if tokenizer.sep_token is None:
        raise MeraError(f"the tokenizer of {base!r} has no sep_token; the judge input needs one")
    tokenizer.truncation_side = "left"
    limit = min(max_length, getattr(model.config, "max_position_embeddings", max_length))
    rows = datasets.Dataset.from_dict(
        {
            "text": [judge_text(r, tokenizer.sep_token) for r in records],
            "labels": [r["label"] for r in records],
        }
    )
    rows = rows.map(
        lambda b: tokenizer(b["text"], truncation=True, max_length=limit),
        batched=True,
        remove_columns=["text"],
    )
    args = TrainingArguments(
        output_dir=str(stage / "checkpoints"),
        num_train_epochs=epochs,
        learning_rate=learning_rate,
        per_device_train_batch_size=batch_size,
        seed=seed,
        save_strategy="no",
        report_to=[],
        logging_steps=10,
        use_cpu=(device == "cpu"),
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=model, args=args, train_dataset=rows, data_collator=DataCollatorWithPadding(tokenizer)
    )
    trainer.train()
    _save(trainer, tokenizer, stage / "model")


def _save(trainer, tokenizer, model_dir: Path) -> None:
    """The trained judge into ``model_dir``; a full disk is one line (safetensors raises
    its own SafetensorError, not an OSError), and the output folder is left as it was."""
    from safetensors import SafetensorError

    try:
        trainer.save_model(str(model_dir))
        tokenizer.truncation_side = "right"  # saved as the usual default; judges set their own
        tokenizer.save_pretrained(str(model_dir))
    except (OSError, SafetensorError) as err:
        reason = getattr(err, "strerror", None) or str(err).splitlines()[0]
        raise MeraError(
            f"cannot write the trained judge into {model_dir}: {reason}; the output "
            "folder is left as it was (free some space or fix the permissions, "
            "then rerun)"
        ) from None
