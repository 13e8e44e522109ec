"""The ten image tasks besides ruHHH-Image, end to end on their bundled samples: build,
load from a raw folder / an export / a Hub-layout copy, render (the official rule,
restated here from multimodal_tasks/<task>/utils.py and the YAMLs), evaluate with the
built-in tiny model (one run over all image tasks), score, and the submission."""

from __future__ import annotations

import io
import json
import shutil
import string
import zipfile

import datasets
import pytest
import yaml
from PIL import Image, ImageChops

from mera_multi_hf import MeraError, get_task, load_task
from mera_multi_hf.cli.main import main
from mera_multi_hf.data.builder import task_features
from mera_multi_hf.data.examples import make_examples
from mera_multi_hf.data.publish import export_raw
from mera_multi_hf.demo.sample_data import bundled_sample, write_sample
from mera_multi_hf.judge.judges import raw_inputs
from mera_multi_hf.scoring.score import score_task

S = datasets.Value("string")
I32 = datasets.Value("int32")
SEQ = datasets.Sequence(S)
OPTS = lambda letters: {f"option_{c}": S for c in letters}  # noqa: E731

# The Hub features, as each task's upload notebook (datasets/<Task>/upload_dataset_to_HF.ipynb)
# declares them: (inputs, outputs, meta).
HUB = {
    "rucommonvqa": (
        {"question": S},
        SEQ,
        {"id": I32, "categories": {"question_type": S}, "complexity": S, "image": {"source": SEQ}},
    ),
    "ruclevr": (
        {"question": S},
        S,
        {"id": I32, "question_type": S, "image": {"synt_source": SEQ, "type": SEQ}},
    ),
    "weird": (
        {"question": S, **OPTS("ab")},
        S,
        {
            "id": I32,
            "categories": {"commonsense_violation_group": S, "commonsense_violation_subgroup": S},
            "pair_id": S,
            "image": {"synt_source": SEQ, "source": S},
        },
    ),
    "runaturalsciencevqa": (
        {"context": S, "question": S, **OPTS("abcd")},
        S,
        {"id": I32, "categories": {"domain": S, "subdomain": S}},
    ),
    "labtabvqa": (
        {"question": S, **OPTS("abcdefg")},
        S,
        {
            "id": I32,
            "rows": I32,
            "columns": I32,
            "categories": {"question_type": S, "question_text": S, "question_source": S},
            "image": {k: SEQ for k in ("synt_source", "source", "type", "content", "context")},
        },
    ),
    "realvqa": (
        {"question": S},
        S,
        {
            "id": I32,
            "categories": {"question_topic": SEQ, "domain": SEQ},
            "image": {k: SEQ for k in ("source", "type", "content", "context")},
        },
    ),
    "rumathvqa": (
        {"annotation": S},
        S,
        {
            "id": I32,
            "categories": {"topic": S},
            "image": {k: S for k in ("source", "type", "content")},
        },
    ),
    "schoolsciencevqa": (
        {"question": S, "context": S, **OPTS("abcd")},
        S,
        {
            "id": I32,
            "categories": {"question_difficulty": I32, "domain": S},
            "image": {"source": SEQ, "type": SEQ},
        },
    ),
    "unisciencevqa": (
        {"question": S, "annotation": S, **OPTS("abcdefghij")},
        S,
        {
            "id": I32,
            "categories": {"type_answer": S, "subdomain": S},
            "image": {k: S for k in ("source", "type", "content")},
        },
    ),
    "rutie_image": (
        {"question": S, **OPTS("abcd")},
        S,
        {
            "id": I32,
            "type": S,
            "unified_category": S,
            "nonunified_category": S,
            "turing_imitation": S,
            "short_context": I32,
            "long_context": I32,
            "image": {"type": S},
        },
    ),
}
# What the project adds to the Hub's meta: the domain config, the dialogue position.
ADDED_META = {
    "runaturalsciencevqa": {"domain": S},
    "schoolsciencevqa": {"domain": S},
    "unisciencevqa": {"domain": S},
    "rutie_image": {"question_id": I32, "dialog_id": I32},
}
TASKS = list(HUB)
RUN_TASKS = [t for t in TASKS if t != "rutie_image"]  # ruTiE is covered by test_dialogues
CLASS_FILES = {
    "rucommonvqa": "ruCommonVQA",
    "ruclevr": "ruCLEVR",
    "weird": "WEIRD",
    "runaturalsciencevqa": "ruNaturalScienceVQA",
    "labtabvqa": "LabTabVQA",
    "realvqa": "RealVQA",
    "rumathvqa": "ruMathVQA",
    "schoolsciencevqa": "SchoolScienceVQA",
    "unisciencevqa": "UniScienceVQA",
    "rutie_image": "ruTiE_Image",
    "ruhhh_image": "ruHHH_Image",
}


def hub_features(task: str, decode: bool) -> datasets.Features:
    inputs, outputs, meta = HUB[task]
    return datasets.Features(
        {
            "instruction": S,
            "inputs": {"image": datasets.Image(decode=decode), **inputs},
            "outputs": outputs,
            "meta": meta,
        }
    )


def raw(task: str, split: str = "test") -> list[dict]:
    return json.loads((bundled_sample(task) / f"{split}.json").read_text())["data"]


def raw_meta(task: str) -> dict:
    return json.loads((bundled_sample(task) / "raw_dataset_meta.json").read_text())


def instruction_of(task: str, record: dict) -> str:
    value = record["instruction"]
    return raw_meta(task)["prompts"][value] if isinstance(value, int) else value


def official_prompt(task: str, record: dict) -> str:
    """The official doc_to_text over a Hub row: ``instruction.format(**inputs)`` (every
    task's utils.py), inputs absent from a record being None; ruTiE (rutie_vision_gen.yaml):
    every brace doubled except the question and option fields, then format, then strip."""
    inputs = {name: record["inputs"].get(name) for name in HUB[task][0]}
    text = instruction_of(task, record)
    if task != "rutie_image":
        return text.format(**inputs)
    text = text.replace("{", "{{").replace("}", "}}")
    for name in ("question", "option_a", "option_b", "option_c", "option_d"):
        text = text.replace("{{" + name + "}}", "{" + name + "}")
    return text.format(**inputs).strip()


def mera_em(prediction: str, gold) -> int:
    """The YAMLs' exact_match with ignore_case and ignore_punctuation; a list gold counts
    when any answer matches."""
    norm = lambda s: s.lower().translate(str.maketrans("", "", string.punctuation))  # noqa: E731
    golds = gold if isinstance(gold, list) else [gold]
    return int(any(norm(prediction) == norm(g) for g in golds))


def domain_of(task: str, record: dict) -> str | None:
    """The domain config a raw record belongs to (None for a task without domains)."""
    if not get_task(task).domains:
        return None
    named = record["meta"].get("domain") or record["meta"]["categories"]["domain"]
    return {d.lower(): d for d in get_task(task).domains}[named.lower().replace(" ", "_")]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """`mera-multi evaluate --tasks image` on the bundled samples with the tiny model."""
    out = tmp_path_factory.mktemp("image-run")
    assert (
        main(
            [
                "evaluate",
                "--tasks",
                "image",
                "--max_new_tokens",
                "8",
                "--output_dir",
                str(out),
                "--no_progress",
            ]
        )
        == 0
    )
    results = json.loads((out / "results.json").read_text())
    with zipfile.ZipFile(out / "submission.zip") as zf:
        files = {
            name: json.loads(zf.read(name)) for name in zf.namelist() if name.endswith(".json")
        }
    return out, results, files


@pytest.mark.parametrize("task", TASKS)
def test_bundled_sample_is_what_the_generator_writes(task, tmp_path):
    fresh, shipped = write_sample(tmp_path / task, task), bundled_sample(task)
    for name in (
        "test.json",
        "shots.json",
        "raw_dataset_meta.json",
        "raw_readme_en.json",
        "raw_readme_ru.json",
    ):
        assert json.loads((fresh / name).read_text()) == json.loads((shipped / name).read_text())
    pictures = sorted(p.name for p in (shipped / "samples").iterdir())
    assert pictures == sorted(p.name for p in (fresh / "samples").iterdir())
    for name in pictures:
        assert (shipped / "samples" / name).stat().st_size < 4096  # a few kB at most
        with Image.open(shipped / "samples" / name) as a, Image.open(fresh / "samples" / name) as b:
            assert ImageChops.difference(a.convert("RGB"), b.convert("RGB")).getbbox() is None
    ids = [r["meta"]["id"] for r in raw(task) + raw(task, "shots")]
    if get_task(task).dialogue:  # ruTiE: ids by the official arithmetic, 500 per dialogue
        ids = [r["meta"]["id"] for r in raw(task)]
        assert ids == [
            1 + 500 * m["dialog_id"] + m["question_id"] for m in (r["meta"] for r in raw(task))
        ]
        return
    assert ids == list(range(1, len(ids) + 1))  # one numbering from 1 across test and shots


@pytest.mark.parametrize("task", TASKS)
def test_build_export_and_load_give_the_hub_schema(task, tmp_path):
    out = tmp_path / "export"
    assert main(["build", task, "--raw", str(bundled_sample(task)), "--out", str(out)]) == 0
    exported = load_task(task, source=out)
    expected = hub_features(task, decode=True)
    expected["meta"].update(ADDED_META.get(task, {}))
    assert exported["test"].features == expected
    from_raw = load_task(task, source="sample")
    assert from_raw["test"].features == expected
    for split in ("test", "shots"):
        records = raw(task, split)
        # a domain task comes back config by config (the task's domain order), as from the Hub
        order = (
            sorted(records, key=lambda r: get_task(task).domains.index(domain_of(task, r)))
            if get_task(task).domains
            else records
        )
        assert [m["id"] for m in exported[split]["meta"]] == [r["meta"]["id"] for r in order]
        assert [(m["id"], m.get("domain")) for m in from_raw[split]["meta"]] == [
            (r["meta"]["id"], domain_of(task, r)) for r in order
        ]
    private = raw_meta(task)["license"] == "MERA_private"
    assert private == (not get_task(task).public)
    assert all(o in ("", []) for o in exported["test"]["outputs"]) == private  # answers hidden
    card = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    configs = list(get_task(task).domains or ("default",))  # one per domain, as on the Hub
    # and a domain task's default config "all", joining them
    assert [c["config_name"] for c in card["configs"]] == configs + (
        ["all"] if get_task(task).domains else []
    )
    infos = card["dataset_info"]
    infos = infos if isinstance(infos, list) else [infos]
    sizes = {
        (i.get("config_name", "default"), s["name"]): s["num_examples"]
        for i in infos
        for s in i["splits"]
    }
    for split in ("test", "shots"):
        for config in configs:
            assert sizes[config, split] == sum(
                domain_of(task, r) in (config, None) for r in raw(task, split)
            )


@pytest.mark.parametrize("task", TASKS)
def test_render_is_the_official_doc_to_text(task):
    spec = get_task(task)
    ds = load_task(task, source="sample", split="test")
    by_id = {r["meta"]["id"]: r for r in raw(task)}
    examples = make_examples(spec, ds)
    assert len(examples) == len(by_id)
    for example in examples:
        assert example.prompt == official_prompt(task, by_id[example.id])
        assert example.media_fields == ("image",) and example.prompt.count("<image>") == 1


def _hub_rows(task: str, records: list[dict], hidden: bool) -> list[dict]:
    """Raw records as the upload notebook turns them into Hub rows: excluded fields
    dropped, the instruction rendered, images as bytes, ruCommonVQA answers as a list,
    private test answers blanked; the meta keeps only the Hub's own fields."""
    rows = []
    for record in records:
        row = json.loads(json.dumps(record))
        row["instruction"] = instruction_of(task, record)
        row["inputs"]["image"] = {
            "bytes": (bundled_sample(task) / record["inputs"]["image"]).read_bytes(),
            "path": None,
        }
        if task == "rucommonvqa" and not isinstance(row["outputs"], list):
            row["outputs"] = [row["outputs"]]
        if hidden:
            row["outputs"] = [] if task == "rucommonvqa" else ""
        row["meta"] = {k: v for k, v in row["meta"].items() if k in HUB[task][2]}
        rows.append(row)
    return rows


def _write_hub_copy(task: str, folder) -> None:
    """The task laid out as its Hub copy: Parquet with the notebook's features, one config
    per domain for a domain-split task (keyed by the domain each record names)."""
    spec, configs = get_task(task), []
    domains = spec.domains or ("default",)
    for domain in domains:
        files = []
        for split in ("test", "shots"):
            records = [
                r for r in raw(task, split) if not spec.domains or domain_of(task, r) == domain
            ]
            hidden = split == "test" and not spec.public
            ds = datasets.Dataset.from_list(
                _hub_rows(task, records, hidden), features=hub_features(task, decode=False)
            )
            (folder / domain).mkdir(parents=True, exist_ok=True)
            ds.to_parquet(str(folder / domain / f"{split}.parquet"))
            files.append(f"  - split: {split}\n    path: {domain}/{split}.parquet")
        configs.append(f"- config_name: {domain}\n  data_files:\n" + "\n".join(files))
    (folder / "README.md").write_text("---\nconfigs:\n" + "\n".join(configs) + "\n---\n")


@pytest.mark.parametrize("task", TASKS)
def test_the_hub_copy_loads_in_the_same_schema(task, tmp_path):
    # A folder name of its own: `datasets` caches a local folder with a `configs:` card
    # by its name and relative file patterns, so equally named copies would collide.
    folder = tmp_path / f"{task}-hub-copy"
    _write_hub_copy(task, folder)
    hub = load_task(task, source=folder)
    local = load_task(task, source="sample")
    for split in ("test", "shots"):
        assert hub[split].features == local[split].features
        key = lambda m: m["id"]  # noqa: E731 (domain configs come back domain by domain)
        assert sorted(hub[split]["meta"], key=key) == sorted(
            (
                {**m, **{k: None for k in ("question_id", "dialog_id") if k in m}}
                if task == "rutie_image"
                else m
                for m in local[split]["meta"]
            ),
            key=key,
        )
        spec = get_task(task)
        hub_prompts = {e.id: e.prompt for e in make_examples(spec, hub[split])}
        assert hub_prompts == {e.id: e.prompt for e in make_examples(spec, local[split])}


@pytest.mark.parametrize("task", RUN_TASKS)
def test_evaluation_scores_and_submits_each_task(task, run):
    out, results, files = run
    scored = results["tasks"][task]
    records = raw(task)
    assert scored["n_examples"] == len(records) and scored["scorable"]
    assert scored["metric_modes"]["exact_match"] == "mera"
    lines = [json.loads(x) for x in (out / f"samples_{task}_test.jsonl").read_text().splitlines()]
    golds = {r["meta"]["id"]: r["outputs"] for r in records}
    assert sorted(line["id"] for line in lines) == sorted(golds)
    if get_task(task).gold_list:  # a single raw answer becomes a list of one
        golds = {i: g if isinstance(g, list) else [g] for i, g in golds.items()}
    assert all(line["target"] == golds[line["id"]] for line in lines)  # the typed gold
    ems = [mera_em(line["filtered"], golds[line["id"]]) for line in lines]
    assert [line["metrics"]["exact_match"] for line in lines] == ems
    assert scored["metrics"]["exact_match"] == pytest.approx(sum(ems) / len(ems))
    rows = files[f"{CLASS_FILES[task]}.json"]["data"]["test"]
    assert sorted(r["meta"]["id"] for r in rows) == sorted(golds)
    assert all(isinstance(r["outputs"], str) for r in rows)


def test_one_submission_holds_every_image_task(run):
    _, results, files = run
    assert set(files) == {f"{CLASS_FILES[t]}.json" for t in TASKS + ["ruhhh_image"]}
    assert set(results["tasks"]) >= set(RUN_TASKS)


def test_rucommonvqa_any_acceptable_answer_scores_and_the_judge_sees_the_list():
    spec = get_task("rucommonvqa")
    examples = make_examples(spec, load_task(spec, source="sample", split="test"))
    assert any(isinstance(e.gold, list) and len(e.gold) > 1 for e in examples)
    for pick in (0, -1):  # the first or the last acceptable answer, case and punctuation changed
        predictions = {
            e.id: (e.gold[pick] if isinstance(e.gold, list) else e.gold).upper() + "!"
            for e in examples
        }
        assert score_task(spec, examples, predictions).metrics["exact_match"] == 1.0
    wrong = {e.id: "; ".join(e.gold) for e in examples}
    assert score_task(spec, examples, wrong).metrics["exact_match"] == pytest.approx(
        sum(len(e.gold) == 1 for e in examples) / len(examples)
    )
    first = examples[0]
    assert raw_inputs(first.prompt, first.gold, "три", "|")[0] == f"{first.prompt}|['3', 'три']|три"


@pytest.mark.parametrize("task", ["runaturalsciencevqa", "schoolsciencevqa", "unisciencevqa"])
def test_domain_score_is_the_size_weighted_mean(task):
    spec = get_task(task)
    examples = make_examples(spec, load_task(spec, source="sample", split="test"))
    sizes: dict[str, int] = {}
    for e in examples:
        sizes[e.breakdown["domain"]] = sizes.get(e.breakdown["domain"], 0) + 1
    assert len(set(sizes.values())) > 1  # unequal domains: weighting matters
    right = {max(sizes, key=sizes.get)}  # all right in the largest domain, wrong elsewhere
    predictions = {
        e.id: e.gold if e.breakdown["domain"] in right else "нет ответа" for e in examples
    }
    result = score_task(spec, examples, predictions)
    by_domain = result.breakdown["domain"]
    assert {d: r["n_examples"] for d, r in by_domain.items()} == sizes
    weighted = sum(sizes[d] * r["exact_match"] for d, r in by_domain.items()) / len(examples)
    unweighted = sum(r["exact_match"] for r in by_domain.values()) / len(by_domain)
    assert result.metrics["exact_match"] == pytest.approx(weighted)
    assert weighted == pytest.approx(sum(sizes[d] for d in right) / len(examples))
    assert weighted != pytest.approx(unweighted)


def test_unisciencevqa_mixes_options_and_short_answers():
    ds = load_task("unisciencevqa", source="sample", split="test")
    examples = {e.id: e for e in make_examples(get_task("unisciencevqa"), ds)}
    kinds = {m["categories"]["type_answer"] for m in ds["meta"]}
    assert kinds == {"short answer", "single choice"}
    three = next(row for row in ds if row["inputs"]["option_c"] and not row["inputs"]["option_d"])
    assert three["inputs"]["option_d"] is None
    assert "\nD. None\n" in examples[three["meta"]["id"]].prompt  # as instruction.format does
    short = next(row for row in ds if row["inputs"]["option_a"] is None)
    assert short["outputs"].isdigit() and "None" not in examples[short["meta"]["id"]].prompt


def test_rumathvqa_has_no_question_and_labtab_seven_options():
    assert get_task("rumathvqa").text_fields == ("annotation",)
    math = load_task("rumathvqa", source="sample", split="test")
    assert "question" not in math.features["inputs"]
    assert all(row["annotation"] for row in math["inputs"])
    lab = get_task("labtabvqa")
    assert (
        lab.choices == tuple("ABCDEFG")
        and sum(f.startswith("option_") for f in lab.text_fields) == 7
    )


def test_rutie_image_sample_has_dialogue_positions_and_cyrillic_golds():
    ds = load_task("rutie_image", source="sample", split="test")
    positions = [(m["dialog_id"], m["question_id"]) for m in ds["meta"]]
    assert positions == [(d, q) for d in range(3) for q in range(3)]
    assert {"Б", "В"} <= set(ds["outputs"]) and {"A", "B"} <= set(ds["outputs"])


def _broken_copy(tmp_path, task, edit):
    folder = tmp_path / task
    shutil.copytree(bundled_sample(task), folder)
    doc = json.loads((folder / "test.json").read_text())
    edit(doc["data"][1])
    (folder / "test.json").write_text(json.dumps(doc, ensure_ascii=False))
    return folder


def test_bad_domain_and_bad_answer_list_name_file_id_and_field(tmp_path):
    folder = _broken_copy(
        tmp_path, "schoolsciencevqa", lambda r: r["meta"]["categories"].update(domain="astrology")
    )
    with pytest.raises(MeraError) as err:
        load_task("schoolsciencevqa", source=folder)
    line = next(x for x in str(err.value).splitlines() if "astrology" in x)
    assert "test.json, id=2, field meta.domain:" in line
    folder = _broken_copy(tmp_path, "rucommonvqa", lambda r: r.update(outputs=["да", 1]))
    with pytest.raises(MeraError, match=r"outputs.*list of answers must hold strings"):
        load_task("rucommonvqa", source=folder)


def test_picture_bytes_are_png():
    for task in TASKS:
        data = (bundled_sample(task) / raw(task)[0]["inputs"]["image"]).read_bytes()
        with Image.open(io.BytesIO(data)) as img:
            assert img.format == "PNG"


def _copy_with(tmp_path, task, split, edit, name="copy"):
    folder = tmp_path / name
    shutil.copytree(bundled_sample(task), folder)
    doc = json.loads((folder / f"{split}.json").read_text())
    edit(doc)
    (folder / f"{split}.json").write_text(json.dumps(doc, ensure_ascii=False))
    return folder


def test_gold_list_is_a_typed_list_column_hidden_as_empty(tmp_path):
    assert task_features(get_task("rucommonvqa"), {})["outputs"] == datasets.List(S)
    assert task_features(get_task("ruclevr"), {})["outputs"] == S
    records = {r["meta"]["id"]: r["outputs"] for r in raw("rucommonvqa")}
    assert any(isinstance(o, str) for o in records.values())  # one answer as a plain string
    private = _copy_with(tmp_path, "rucommonvqa", "test", lambda d: d.update(access="private"))
    spec = get_task("rucommonvqa")
    hidden = load_task(spec, source=export_raw(spec, private, tmp_path / "out"), split="test")
    assert hidden.features["outputs"] == datasets.List(S)
    assert set(map(len, hidden["outputs"])) == {0}
    assert all(e.gold is None for e in make_examples(spec, hidden))  # hidden, not scorable
    kept = load_task(spec, source=private, split="test")  # the local cache keeps the answers
    assert {m["id"]: o for m, o in zip(kept["meta"], kept["outputs"])} == {
        i: o if isinstance(o, list) else [o] for i, o in records.items()
    }

    def bad(doc):
        doc["data"][0]["outputs"] = []
        doc["data"][1]["outputs"] = {"answer": "да"}
        doc["data"][2]["outputs"] = ["да", " "]

    with pytest.raises(MeraError) as err:
        load_task(spec, source=_copy_with(tmp_path, "rucommonvqa", "shots", bad, "bad"))
    lines = str(err.value).splitlines()
    ids = [r["meta"]["id"] for r in raw("rucommonvqa", "shots")]
    for example_id, text in (
        (ids[0], "empty gold answer in a split that has answers"),
        (ids[1], "must be an answer or a list of answers"),
        (ids[2], "empty gold answer"),
    ):
        assert any(f"shots.json, id={example_id}, field outputs: {text}" in x for x in lines)


def test_optional_text_inputs_may_be_left_out_and_others_may_not(tmp_path):
    def drop(doc):
        for name in ("option_a", "option_b", "option_c"):
            doc["data"][1]["inputs"].pop(name, None)  # a choice question with its options gone
        doc["data"][2]["inputs"]["option_b"] = 5
        del doc["data"][3]["inputs"]["question"]

    folder = _copy_with(tmp_path, "unisciencevqa", "test", drop)
    with pytest.raises(MeraError) as err:
        load_task("unisciencevqa", source=folder)
    ids = [r["meta"]["id"] for r in raw("unisciencevqa")]
    text = str(err.value)
    assert f"id={ids[2]}, field inputs.option_b: must be a string, got int" in text
    assert f"id={ids[3]}, field inputs.question: missing required field" in text
    assert f"id={ids[1]}," not in text  # optional_text: absent is allowed

    def drop_only(doc):
        drop(doc)
        del doc["data"][2:4]

    ds = load_task(
        "unisciencevqa",
        source=_copy_with(tmp_path, "unisciencevqa", "test", drop_only, "fixed"),
        split="test",
    )
    row = next(r for r in ds if r["meta"]["id"] == ids[1])
    assert row["inputs"]["option_a"] is None and row["inputs"]["option_d"] is None
    prompt = next(e.prompt for e in make_examples(get_task("unisciencevqa"), ds) if e.id == ids[1])
    assert "\nA. None\nB. None\nC. None\nD. None\n" in prompt  # as instruction.format prints it
    strict = _copy_with(
        tmp_path,
        "runaturalsciencevqa",
        "test",
        lambda d: d["data"][0]["inputs"].pop("option_d"),
        "strict",
    )
    with pytest.raises(MeraError, match=r"field inputs.option_d: missing required field"):
        load_task("runaturalsciencevqa", source=strict)
