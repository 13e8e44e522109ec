"""The dataset card of an export: its YAML header (configs, dataset_info, license,
tags) and its text in English and Russian, built from the raw folder's metadata and
readme sections, with what this export is and the citation."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import datasets
from datasets.info import DatasetInfosDict
from huggingface_hub import DatasetCard, DatasetCardData

from mera_multi_hf._version import __version__
from mera_multi_hf.data.builder import ALL_DOMAINS, MEDIA_FEATURES
from mera_multi_hf.data.raw import fill_readme
from mera_multi_hf.data.raw.card import INTERNAL_TAG, PRIVATE_LICENSE_NAME
from mera_multi_hf.scoring.registry import CARD_TEXT
from mera_multi_hf.tasks.declarations import CITATION
from mera_multi_hf.tasks.spec import TaskSpec

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
    return lines + _media_lines(task)


# How an example's media read, per modality: (the feature that gives what a user wants
# from the stored form, what that gives, who else reads it so).
_MEDIA_READING = {
    "image": ("Image()", "pictures (PIL images)", "`load_task` decodes them too"),
    "audio": ("Audio(decode=False)", "the clips' bytes", "`load_task` hands out the bytes"),
    "video": ("Video(decode=False)", "the videos' bytes", "`load_task` hands out the bytes"),
}


def _media_lines(task: TaskSpec) -> list[str]:
    """How to load the export and read its media: they are stored as the official Hub
    copy stores them (MEDIA_FEATURES), and one cast gives them in the other form."""
    stored = MEDIA_FEATURES[task.modality]()
    label = f"{type(stored).__name__.removeprefix('Undecoded')}({'' if stored.decode else 'decode=False'})"
    wanted, gives, package = _MEDIA_READING[task.modality]
    fields = ", ".join(f"`inputs.{name}`" for name in task.media_fields)
    decoding = (
        ": each decodes on access with torchcodec, as in the Hub copy"
        if stored.decode
        else ': an example holds `{"bytes", "path"}`, not a decoded item'
    )
    verb = "is" if len(task.media_fields) == 1 else "are"
    cast = ", ".join(f'"{name}": datasets.{wanted}' for name in task.media_fields)
    return [
        f"Media are stored as the official Hub copy stores them: {fields} {verb} "
        f"`datasets.{label}`{decoding}. One cast gives {gives}; "
        f'`mera_multi_hf.load_task("{task.key}", source=PATH)` reads this folder or the '
        f"Hub copy, and {package}.",
        "",
        "```python",
        "import datasets",
        "",
        f'ds = datasets.load_dataset("{task.hub_id}", split="test")  # or this folder',
        f'ds = ds.cast_column("inputs", {{**ds.features["inputs"], {cast}}})',
        "```",
        "",
    ]


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
