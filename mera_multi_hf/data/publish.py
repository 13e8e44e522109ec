"""Raw MERA folder -> the Hub's own dataset layout (Parquet shards + a README card).

The exported folder loads with ``datasets.load_dataset(<folder>)`` and can be pushed
as it is with huggingface_hub; no loading script is involved (datasets 4+ has none).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

import datasets
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml
from datasets.info import DatasetInfosDict
from datasets.utils.py_utils import convert_file_size_to_int
from huggingface_hub import DatasetCard, DatasetCardData

from mera_multi_hf._version import __version__
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.limits import Limits
from mera_multi_hf.core.outputs import MARKER, OutputFolder, read_marker  # noqa: F401  (MARKER: read from here too)
from mera_multi_hf.data.builder import ALL_DOMAINS
from mera_multi_hf.data.hub_layout import build_configs, joined_info, stage_data
from mera_multi_hf.data.raw import fill_readme
from mera_multi_hf.data.raw.card import INTERNAL_TAG, PRIVATE_LICENSE_NAME
from mera_multi_hf.tasks.metric_cards import CARD_TEXT
from mera_multi_hf.tasks.table import CITATION, TaskSpec


def shard_size(value) -> int:
    """``--max-shard-size`` in bytes ("500MB", "1GB", 1000000); a clear error otherwise."""
    try:
        size = convert_file_size_to_int(value)
    except (ValueError, TypeError):
        size = None
    if not isinstance(size, int) or size <= 0:
        raise MeraError(
            f"--max-shard-size {value!r}: not a positive size (examples: 500MB, 1GB, 100000000)"
        )
    return size


def default_workers() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def export_raw(
    task: TaskSpec,
    raw_dir: str | Path,
    out_dir: str | Path,
    max_shard_size: str | int = "500MB",
    *,
    include_private_answers: bool = False,
    limits: Limits | None = None,
    num_proc: int | None = None,
) -> Path:
    """Build the task from its raw folder and write the Hub layout into ``out_dir``.

    Every problem in the raw folder is reported at once (DataValidationError) and nothing
    is written in that case. The export is built in a staging folder inside ``out_dir``
    and its files are moved in only on success, README.md last, under the tool's
    ownership rule (:mod:`mera_multi_hf.core.outputs`: a folder holding anything but an
    earlier export's files is refused). ``include_private_answers`` keeps a private test split's gold answers:
    an internal export, marked so in its card and marker, which :func:`push` refuses.
    ``limits``: what media may declare; ``num_proc``: processes decoding media (1: this one;
    default: the CPUs this process may use).
    """
    from mera_multi_hf.core.outputs import write_error

    size = shard_size(max_shard_size)
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    if not raw_dir.is_dir():
        raise MeraError(f"raw dataset folder not found: {raw_dir}")
    with (
        OutputFolder(out_dir, kind="export", inputs=[raw_dir]).claim() as folder,
        folder.staging() as work,
    ):
        try:
            builders = build_configs(
                task,
                raw_dir,
                work,
                size,
                {
                    "limits": limits,
                    "include_private_answers": include_private_answers,
                    "workers": num_proc or default_workers(),
                },
            )
            raw = next(iter(builders.values())).raw  # the one reading every config shares
            internal = include_private_answers and raw.private
            staged = work / "export"
            configs = stage_data(builders, work / "prepared", staged)
            raw.test_ids = _test_ids(staged)
            write_card(
                task,
                joined_info(builders, configs),
                staged / "README.md",
                raw,
                internal=internal,
                configs=configs,
            )
            files = {
                str(f.relative_to(staged)): f for f in sorted(staged.rglob("*")) if f.is_file()
            }
            folder.write_set(
                files,
                index="README.md",
                private=files if internal else (),
                info={"version": __version__, "task": task.key, "internal_with_answers": internal},
            )
            for note in raw.notes:  # said once, after a clean build
                print(f"mera-multi: note: {note}", file=sys.stderr)
        except OSError as err:  # a full disk or a read-only folder while building
            raise write_error(err, work) from None
    return out_dir


# ---- the dataset card ----

# The standard descriptions that "default" stands for in data_field_descriptions and
# metrics: (English, Russian). option_<x> fields are described by their letter.
FIELD_DEFAULTS = {
    "instruction": (
        "The prompt of this example: a template whose {field} placeholders are "
        "filled from `inputs`; placeholders such as `<image>` mark where media go.",
        "Промпт примера: шаблон, плейсхолдеры {поле} которого заполняются из "
        "`inputs`, а плейсхолдеры вида `<image>` отмечают место медиа.",
    ),
    "inputs": (
        "What the model is given: media and text fields.",
        "То, что получает модель: медиа и текстовые поля.",
    ),
    "inputs.image": ("The picture the question is about.", "Изображение, о котором вопрос."),
    "inputs.audio": ("The audio clip the question is about.", "Аудиозапись, о которой вопрос."),
    "inputs.video": ("The video the question is about.", "Видео, о котором вопрос."),
    "inputs.question": ("The question text.", "Текст вопроса."),
    "outputs": (
        "The gold answer (empty in the test split of a private task).",
        "Правильный ответ (пустая строка в тесте закрытой задачи).",
    ),
    "meta": (
        "Metadata of the example, never shown to the model.",
        "Метаданные примера; модели не показываются.",
    ),
    "meta.id": (
        "The example number, unique across test and shots.",
        "Номер примера, сквозной для test и shots.",
    ),
    "meta.group_id": (
        "Examples with the same media and question share it.",
        "Общий у примеров с одинаковыми медиа и вопросом.",
    ),
    "meta.categories": ("The categories of the example.", "Категории примера."),
    "meta.image": (
        "Image metadata (MERA image taxonomy).",
        "Метаданные изображения (классификация изображений MERA).",
    ),
    "meta.image.source": ("Where the image comes from.", "Происхождение изображения."),
    "meta.image.type": ("The kind of image.", "Тип изображения."),
    "meta.image.content": ("What the image shows.", "Что изображено."),
    "meta.image.context": ("Context present in the image.", "Контекст на изображении."),
    "meta.image.synt_source": (
        "Generators used to make the material, if any.",
        "Генераторы, которыми сделан материал, если были.",
    ),
}
LANGS = ("en", "ru")
HF_LICENSES = {
    "mit",
    "apache-2.0",
    "cc-by-4.0",
    "cc-by-sa-4.0",
    "cc-by-nc-4.0",
    "cc-by-nc-sa-4.0",
    "cc0-1.0",
    "openrail",
    "other",
}


def _default_text(path: str, lang: str) -> str:
    name = path.rsplit(".", 1)[-1]
    if path.startswith("inputs.option_") and len(name) == len("option_a"):
        return ("Answer option {}." if lang == "en" else "Вариант ответа {}.").format(
            name[-1].upper()
        )
    pair = FIELD_DEFAULTS.get(path)
    return pair[LANGS.index(lang)] if pair else ""


def _text(value, lang: str, default: str) -> str:
    """A {"ru","en"} description (or a plain string) in ``lang``; "default" -> default."""
    text = value.get(lang) if isinstance(value, dict) else value
    return default if not isinstance(text, str) or text == "default" else text


def _field_lines(descs: dict, example, lang: str, prefix: str = "", level: int = 0) -> list[str]:
    lines = []
    for name, value in descs.items():
        path = f"{prefix}{name}"
        sample = example.get(name) if isinstance(example, dict) else None
        leaf = isinstance(value, dict) and any(k in value for k in LANGS)
        kind = (
            f" [{type(sample).__name__}]"
            if sample is not None and not isinstance(sample, dict)
            else ""
        )
        text = _text(value if leaf else None, lang, _default_text(path, lang))
        lines.append(f"{'    ' * level}- `{name}`{kind} — {text}".rstrip(" —"))
        if isinstance(value, dict) and not leaf:
            lines += _field_lines(value, sample, lang, f"{path}.", level + 1)
    return lines


def _metric_lines(meta: dict, lang: str) -> list[str]:
    metrics = meta.get("metrics") if isinstance(meta.get("metrics"), dict) else {}
    lines = []
    for name, value in metrics.items():
        pair = CARD_TEXT.get(name, ("", ""))
        lines.append(f"- `{name}`: {_text(value, lang, pair[LANGS.index(lang)])}".rstrip(": "))
    human = meta.get("human_benchmark") if isinstance(meta.get("human_benchmark"), dict) else {}
    if human:
        lines += ["", "Human baseline:" if lang == "en" else "Результаты людей:", ""]
        lines += [f"- {name}: {score}" for name, score in human.items()]
    return lines


def _readme_block(sections: dict, level: str) -> list[str]:
    lines = []
    for title, text in sections.items():
        if title in ("Contributors", "Авторы"):
            lines += [f"{title}: {text.strip()}", ""]
        else:
            lines += [f"{level} {title}", "", text.strip(), ""]
    return lines


def _language_part(meta: dict, sections: dict, lang: str) -> list[str]:
    """One language's half of the card: description, readme sections, fields, metrics."""
    head = "##" if lang == "en" else "###"
    lines = []
    description = meta.get("description")
    if description:
        lines += [_text(description, lang, ""), ""]
    lines += _readme_block(sections, head)
    if meta.get("skills"):
        skills = ", ".join(meta["skills"])
        lines += [f"{'Evaluated skills' if lang == 'en' else 'Проверяемые навыки'}: {skills}", ""]
    if isinstance(meta.get("data_field_descriptions"), dict):
        lines += [f"{head} {'Data fields' if lang == 'en' else 'Поля данных'}", ""]
        lines += _field_lines(meta["data_field_descriptions"], meta.get("data_example"), lang)
        lines.append("")
    if meta.get("metrics") or meta.get("human_benchmark"):
        lines += [f"{head} {'Metrics' if lang == 'en' else 'Метрики'}", ""]
        lines += _metric_lines(meta, lang) + [""]
    return lines


def _card_license(meta: dict) -> dict:
    declared = str(meta.get("license") or "")
    key = declared.strip().lower().replace(" ", "-")
    if key in HF_LICENSES:
        return {"license": key}
    if declared == "MERA_private":
        return {"license": "other", "license_name": PRIVATE_LICENSE_NAME}
    return {"license": "other", "license_name": key[:60] or "unknown"}


def _example_id(example: dict):
    meta = example.get("meta")
    return meta.get("id") if isinstance(meta, dict) else None


def _test_ids(staged: Path) -> set:
    """The meta.id of every exported test row (read back from the staged shards)."""
    ids = set()
    for shard in staged.rglob("test-*.parquet"):
        meta = pq.read_table(shard, columns=["meta"]).column("meta")
        ids.update(pc.struct_field(meta, "id").to_pylist())
    return ids


def _export_notes(task: TaskSpec, info, raw, internal: bool, configs: dict) -> list[str]:
    meta = raw.card_meta() if raw is not None else {}
    sizes = ", ".join(f"{s}: {info.splits[s].num_examples}" for s in info.splits)
    private = raw.private if raw is not None else not task.public
    answers = (
        "**this internal export keeps the hidden gold answers**"
        if internal
        else "gold answers are hidden (`outputs` is empty) and scored by the MERA site"
        if private
        else "gold answers are published"
    )
    prompts = meta.get("prompts")
    how = (
        f"`instruction` was resolved from a list of {len(prompts)} prompts"
        if isinstance(prompts, list)
        else "every record carries its own `instruction`"
    )
    lines = [
        "## This export",
        "",
        f"- Splits: {sizes}. The test split is {'private' if private else 'public'}: {answers}.",
        *(
            [
                f"- One config per domain: {', '.join(configs)}; each example's `meta.domain` "
                f"names its config. The default config `{ALL_DOMAINS}` joins them: "
                "`load_dataset(path)` reads every domain, `load_dataset(path, DOMAIN)` "
                "one."
            ]
            if "default" not in configs
            else []
        ),
        f"- Built by mera-multi-hf {__version__} from the raw MERA layout; {how}. The "
        "model sees `instruction.format(**text inputs)` with media placeholders such as "
        "`<image>` left in place.",
        f"- Dataset size (metadata, computed): {meta.get('dataset_size', 'not declared')}; "
        f"generators used: {', '.join(meta.get('synt_source_models') or []) or 'none'}.",
        f"- Project metrics: {', '.join(task.metrics)} (exact match normalisation "
        f"`{task.em_mode}`).",
        f"- License: {meta.get('license') or 'not declared'}. Official copy: "
        f"[{task.hub_id}](https://huggingface.co/datasets/{task.hub_id}).",
        "",
    ]
    if isinstance(meta.get("data_example"), dict):
        shown = meta["data_example"]
        if private and not internal and _example_id(shown) in getattr(raw, "test_ids", ()):
            shown = {**shown, "outputs": raw.hidden_answer}  # a test record: its answer stays in
        example = json.dumps(shown, ensure_ascii=False, indent=4)
        lines += ["### Data example (raw MERA format)", "", "```json", example, "```", ""]
    lines += [
        "```python",
        "from datasets import load_dataset",
        f'ds = load_dataset("{task.hub_id}")          # or this folder',
        "```",
        "",
    ]
    return lines


def _config_infos(info: datasets.DatasetInfo, configs: dict) -> DatasetInfosDict:
    """The card's ``dataset_info`` of each config: the task's features, the config's splits."""
    infos = {}
    for name, splits in configs.items():
        if name == "default":  # the whole build: its own info
            infos[name] = info
            continue
        config_info = copy.deepcopy(info)
        config_info.config_name = name
        config_info.splits = datasets.SplitDict(dataset_name=info.dataset_name)
        for split, (rows, nbytes) in splits.items():
            config_info.splits.add(
                datasets.SplitInfo(name=split, num_examples=rows, num_bytes=nbytes)
            )
        config_info.dataset_size = sum(nbytes for _, nbytes in splits.values())
        config_info.download_size = config_info.size_in_bytes = None
        infos[name] = config_info
    return DatasetInfosDict(infos)


def _all_domains(configs: dict) -> list[dict]:
    """For a domain-split export, the default config joining every domain, so that
    ``load_dataset(folder)`` reads the whole task as a Hub dataset with several configs
    does (each example's ``meta.domain`` still names its domain)."""
    if "default" in configs or not configs:
        return []
    splits = dict.fromkeys(s for splits in configs.values() for s in splits)
    return [
        {
            "config_name": ALL_DOMAINS,
            "default": True,
            "data_files": [
                {"split": s, "path": [f"{d}/{s}-*" for d, sp in configs.items() if s in sp]}
                for s in splits
            ],
        }
    ]


def write_card(
    task: TaskSpec,
    info: datasets.DatasetInfo,
    path: Path,
    raw=None,
    internal: bool = False,
    configs: dict | None = None,
) -> None:
    """README.md of an export: YAML header (huggingface_hub) and the card built from the
    raw folder's metadata and readme sections (docs/official-protocol.md, "Raw data
    layout and group ids"). ``configs``: config ->
    split -> (rows, bytes), as :func:`hub_layout.stage_data` laid them out (default: one
    config); ``info``: the whole task's (for a domain-split task, :func:`hub_layout.joined_info`)."""
    configs = configs or {
        "default": {s: (info.splits[s].num_examples, info.splits[s].num_bytes) for s in info.splits}
    }
    meta = raw.card_meta() if raw is not None else {}
    readme = (
        {lang: fill_readme(raw.readme.get(lang, {}), meta) for lang in LANGS}
        if raw is not None
        else {"en": {}, "ru": {}}
    )
    tags = ["mera", "mera-multi", "benchmark", task.modality] + ([INTERNAL_TAG] if internal else [])
    card_data = DatasetCardData(
        language=["ru"],
        pretty_name=str(meta.get("dataset_name") or task.hub_id.split("/")[-1]),
        task_categories=list(task.hf_task_categories),
        tags=tags,
        **_card_license(meta),
        configs=[
            {
                "config_name": name,
                "data_files": [
                    {"split": s, "path": f"{'data' if name == 'default' else name}/{s}-*"}
                    for s in splits
                ],
            }
            for name, splits in configs.items()
        ]
        + _all_domains(configs),
    )
    infos = _config_infos(info, configs)
    if "default" not in configs:  # the "all" config: the whole build
        infos[ALL_DOMAINS] = copy.deepcopy(info)
        infos[ALL_DOMAINS].config_name = ALL_DOMAINS
    infos.to_dataset_card_data(card_data)
    lines = [f"# {card_data.pretty_name}", ""]
    if internal:
        lines += [
            "> **INTERNAL EXPORT — DO NOT PUBLISH.** The test split of this private task "
            "keeps its gold answers (built with `--internal-with-answers`); "
            "`mera-multi build --push` refuses it.",
            "",
        ]
    lines += _language_part(meta, readme["en"], "en")
    if readme["ru"] or isinstance(meta.get("description"), dict):
        lines += ["## Описание на русском", ""] + _language_part(meta, readme["ru"], "ru")
    lines += _export_notes(task, info, raw, internal, configs)
    lines += ["## Citation", "", "```bibtex", CITATION.rstrip(), "```", ""]
    DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n" + "\n".join(lines)).save(path)


def is_internal(folder: str | Path) -> bool:
    """Whether an exported folder keeps private answers (marker or card tag says so)."""
    folder = Path(folder)
    info = read_marker(folder).get("info")
    if isinstance(info, dict) and info.get("internal_with_answers"):
        return True  # trusted or not: a copied marker can only make a push refused
    try:
        head = (folder / "README.md").read_text(encoding="utf-8").split("---\n")[1]
        return INTERNAL_TAG in (yaml.safe_load(head) or {}).get("tags", [])
    except (OSError, IndexError, yaml.YAMLError, AttributeError, TypeError):
        return False


def upload_files(folder: str | Path) -> list[str]:
    """What a push sends: the files the export's marker lists that are there as regular
    files (a foreign file beside the export, such as a private_answers.csv, never goes)."""
    root = Path(folder)

    def plain(name: str) -> bool:  # a regular file, reached through no link
        parts = Path(name).parts
        return (
            not any(os.path.islink(root.joinpath(*parts[: i + 1])) for i in range(len(parts)))
            and (root / name).is_file()
        )

    names = sorted(n for n in OutputFolder(root, kind="export").owned() if plain(n))
    if "README.md" not in names:
        raise MeraError(
            f"{folder} holds no export made by this tool (its marker lists no "
            "README.md): build it again, then push"
        )
    return names


def push(folder: str | Path, repo_id: str, private: bool = False, token: str | None = None) -> str:
    """Publish an exported folder as a dataset repository on the Hub (never an internal
    export: that is refused before anything is sent)."""
    if is_internal(folder):
        raise MeraError(
            f"{folder} is an internal export that keeps the hidden test answers "
            "of a private task; it is never pushed. Rebuild without "
            "--internal-with-answers to publish."
        )
    from huggingface_hub import CommitOperationAdd, HfApi, get_token

    from mera_multi_hf.core.masking import remember

    remember(token or get_token())  # masked in any error printed below
    files = upload_files(folder)
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.create_commit(
            repo_id,
            repo_type="dataset",
            commit_message="Upload with mera-multi-hf",
            operations=[CommitOperationAdd(name, str(Path(folder) / name)) for name in files],
        )
    except Exception as err:  # offline, no token, no rights: the export itself is kept
        raise MeraError(
            f"could not publish {folder} to {repo_id}: {type(err).__name__}: {err}. "
            "The exported folder is intact; push it again once this is fixed."
        ) from None
    return f"https://huggingface.co/datasets/{repo_id}"
