"""Domain-split tasks: one config per domain, loaded as one task with meta.domain."""
from __future__ import annotations

import json

import datasets
import pytest

from mera_multi_hf import get_task, load_task
from mera_multi_hf.cli import main

DOMAIN_SIZES = {"biology": 3, "chemistry": 5, "physics": 1, "earth_science": 2}


def _science_rows(domain, n, first_id):
    return [{"instruction": "<image>\\n{context}\\n{question}\\nA. {option_a}\\nB. {option_b}\\n"
                            "C. {option_c}\\nD. {option_d}\\nОтвет:",
             "inputs": {"image": None, "question": f"Вопрос {domain} {i}", "context": "",
                        "option_a": "да", "option_b": "нет", "option_c": "иногда",
                        "option_d": "никогда"},
             "outputs": "ABCD"[i % 4], "meta": {"id": first_id + i}}
            for i in range(n)]


@pytest.fixture
def science_folder(tmp_path):
    """ruNaturalScienceVQA in the Hub's layout: one config (folder of Parquet) per domain."""
    folder = tmp_path / "ruNaturalScienceVQA"
    configs, first_id = [], 0
    for domain, n in DOMAIN_SIZES.items():
        for split in ("test", "shots"):
            rows = _science_rows(domain, n if split == "test" else 1, first_id)
            first_id += len(rows)
            ds = datasets.Dataset.from_list(rows)
            (folder / domain).mkdir(parents=True, exist_ok=True)
            ds.to_parquet(str(folder / domain / f"{split}.parquet"))
        configs.append(f"- config_name: {domain}\n  data_files:\n"
                       f"  - split: test\n    path: {domain}/test.parquet\n"
                       f"  - split: shots\n    path: {domain}/shots.parquet")
    (folder / "README.md").write_text("---\nconfigs:\n" + "\n".join(configs) + "\n---\n")
    return folder


def test_domain_configs_load_as_one_task_with_meta_domain(science_folder):
    test = load_task("runaturalsciencevqa", source=science_folder, split="test")
    assert len(test) == sum(DOMAIN_SIZES.values())
    domains = [m["domain"] for m in test["meta"]]
    assert {d: domains.count(d) for d in DOMAIN_SIZES} == DOMAIN_SIZES
    assert get_task("runaturalsciencevqa").domains == tuple(DOMAIN_SIZES)


def test_scores_break_down_by_domain_and_weigh_by_size(science_folder, tmp_path):
    test = load_task("runaturalsciencevqa", source=science_folder, split="test")
    right = {"biology", "chemistry"}  # all answers right in these, all wrong elsewhere
    lines = [{"id": m["id"], "prediction": gold if m["domain"] in right else "нет ответа"}
             for m, gold in zip(test["meta"], test["outputs"])]
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    out = tmp_path / "r"
    assert main(["score", "--task", "runaturalsciencevqa", "--predictions", str(preds),
                 "--data", str(science_folder), "--out", str(out)]) == 0
    result = json.loads((out / "results.json").read_text())["tasks"]["runaturalsciencevqa"]
    by_domain = result["breakdown"]["domain"]
    assert {d: r["n_examples"] for d, r in by_domain.items()} == DOMAIN_SIZES
    assert by_domain["biology"]["exact_match"] == 1 and by_domain["physics"]["exact_match"] == 0
    weighted = sum(DOMAIN_SIZES[d] * r["exact_match"] for d, r in by_domain.items()) / len(test)
    assert result["metrics"]["exact_match"] == pytest.approx(weighted) == pytest.approx(8 / 11)
    assert "## runaturalsciencevqa by domain" in (out / "results.md").read_text()
