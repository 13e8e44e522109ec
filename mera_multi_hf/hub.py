"""Raw MERA folder -> the Hub's own dataset layout (Parquet shards + a README card).

The exported folder loads with ``datasets.load_dataset(<folder>)`` and can be pushed
as it is with huggingface_hub; no loading script is involved (datasets 4+ has none).
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import datasets
from datasets.info import DatasetInfosDict
from huggingface_hub import DatasetCard, DatasetCardData

from . import __version__
from ._paths import bundled_dir, load_module_from_file
from .errors import DataValidationError, MeraError
from .tasks import CITATION, TaskSpec

TASK_CATEGORIES = {
    "image": ["visual-question-answering", "image-text-to-text"],
    "audio": ["audio-text-to-text"],
    "video": ["video-text-to-text"],
}


def dataset_module(task: TaskSpec):
    """The task's module in dataset_scripts/ (its builder, meta features, normalisation)."""
    path = bundled_dir("dataset_scripts") / f"{task.key}.py"
    if not path.is_file():
        raise MeraError(f"task {task.key} has no dataset builder yet "
                        f"(expected dataset_scripts/{task.key}.py)")
    return load_module_from_file(path, f"mera_multi_hf._dataset_scripts.{task.key}")


def builder_class(task: TaskSpec) -> type:
    module = dataset_module(task)
    for value in vars(module).values():
        if isinstance(value, type) and getattr(value, "TASK_KEY", None) == task.key:
            return value
    raise MeraError(f"dataset_scripts/{task.key}.py declares no builder for {task.key}")


def export_raw(task: TaskSpec, raw_dir: str | Path, out_dir: str | Path,
               max_shard_size: str | int = "500MB") -> Path:
    """Build the task from its raw folder and write the Hub layout into ``out_dir``.

    Every problem in the raw folder is reported at once (DataValidationError) and nothing
    is written in that case; an existing ``out_dir`` is replaced only on success.
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        builder = builder_class(task)(data_dir=str(Path(raw_dir).resolve()),
                                      cache_dir=str(work / "cache"))
        try:
            builder.download_and_prepare(output_dir=str(work / "prepared"),
                                         file_format="parquet", max_shard_size=max_shard_size)
        except MeraError:
            raise
        except Exception:
            if getattr(builder, "raw", None) is None or not builder.raw.problems:
                raise
        if builder.raw.problems:
            raise DataValidationError(builder.raw.problems, str(raw_dir))
        staged = work / "export"
        (staged / "data").mkdir(parents=True)
        for split in builder.info.splits:
            shards = sorted((work / "prepared").glob(f"*-{split}*.parquet"))
            for i, shard in enumerate(shards):
                shard.rename(staged / "data" / f"{split}-{i:05d}-of-{len(shards):05d}.parquet")
        write_card(task, builder.info, staged / "README.md", builder.raw)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        staged.rename(out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out_dir


def write_card(task: TaskSpec, info: datasets.DatasetInfo, path: Path, raw=None) -> None:
    splits = list(info.splits)
    card_data = DatasetCardData(
        language=["ru"],
        license="mit",
        pretty_name=task.hub_id.split("/")[-1],
        task_categories=TASK_CATEGORIES[task.modality],
        tags=["mera", "mera-multi", "benchmark", task.modality],
        configs=[{"config_name": "default",
                  "data_files": [{"split": s, "path": f"data/{s}-*"} for s in splits]}],
    )
    DatasetInfosDict({"default": info}).to_dataset_card_data(card_data)
    sizes = ", ".join(f"{s}: {info.splits[s].num_examples}" for s in splits)
    prompts = len(raw.prompts) if raw is not None and raw.prompts else 0
    access = getattr(raw, "access", "private")
    text = f"""# {task.class_name}

MERA Multi task `{task.key}` ({task.modality}), in the Hugging Face Hub layout: Parquet
shards under `data/` and this card. Built by mera-multi-hf {__version__} from the raw MERA
layout; official copy: [{task.hub_id}](https://huggingface.co/datasets/{task.hub_id}).

- Splits: {sizes}. The test split is {access}: {"gold answers are published" if access == "public"
  else "gold answers are hidden and scored by the MERA site from a submission ZIP"}.
- Every example carries its own `instruction` (one of {prompts or "the task's"} prompts);
  the model sees `instruction.format(**text inputs)` with media placeholders such as
  `<image>` left in place.
- Metrics: {", ".join(task.metrics)} (exact match normalisation `{task.em_mode}`).

```python
from datasets import load_dataset
ds = load_dataset("{task.hub_id}")          # or this folder
from mera_multi_hf import load_task
ds = load_task("{task.key}", source="{task.hub_id}")
```

## Citation

```bibtex
{CITATION}```
"""
    DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n{text}").save(path)


def push(folder: str | Path, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Publish an exported folder as a dataset repository on the Hub."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                          commit_message="Upload with mera-multi-hf")
    except Exception as err:  # offline, no token, no rights: the export itself is kept
        raise MeraError(f"could not publish {folder} to {repo_id}: {type(err).__name__}: {err}. "
                        "The exported folder is intact; push it again once this is fixed.") \
            from None
    return f"https://huggingface.co/datasets/{repo_id}"
