"""Writes the notebooks of this folder (run it after editing a cell here; the tests
execute the .ipynb files, so what is committed is what runs).

    python notebooks/make_notebooks.py
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
VERSION = "".join(
    line.split('"')[1]
    for line in (HERE.parent / "mera_multi_hf" / "_version.py")
    .read_text(encoding="utf-8")
    .splitlines()
    if line.startswith("__version__")
)
INSTALL_TAG = "install"  # cells the tests skip: the package is installed there already

INSTALL = f'''\
# Colab or a fresh machine: install mera-multi-hf. It is not on PyPI and has no published
# repository address yet, so SOURCE is what pip installs (docs/getting-started.md,
# "Install without a checkout"): the path of a wheel built from the project (`pip wheel
# --no-deps .` in a checkout) and uploaded here, or, once the repository is published,
# "git+" and its address.
SOURCE = "mera_multi_hf-{VERSION}-py3-none-any.whl"
!pip install -q "{{SOURCE}}"'''


PICK_MODEL = """\
import torch

GPU = torch.cuda.is_available()
if GPU:   # a real model on the official Hub data (ruHHH-Image test answers are hidden)
    MODEL, DATA, LIMIT = "Qwen/Qwen2.5-VL-3B-Instruct", None, 100
else:     # the built-in tiny random model on the bundled sample: a plumbing check
    MODEL, DATA, LIMIT = None, "sample", None
print("GPU" if GPU else "CPU", "->", MODEL or "the built-in tiny model", "on", DATA or "the Hub copy")"""


def _cells(spec: list[tuple[str, str]]) -> list:
    cells = []
    for kind, text in spec:
        if kind == "md":
            cells.append(new_markdown_cell(text))
        else:
            cell = new_code_cell(text)
            if kind == INSTALL_TAG:
                cell.metadata["tags"] = [INSTALL_TAG]
            cells.append(cell)
    return cells


QUICKSTART = [
    (
        "md",
        "# MERA Multi on the Hugging Face stack: a first run\n\n"
        "Load ruHHH-Image, look at one example as the model sees it, evaluate a model, read "
        "the scores and the chart, and make the submission ZIP. On a CPU runtime this uses "
        "the bundled sample and a tiny random model (about a minute); on a GPU runtime a real "
        "model on the official data.",
    ),
    (INSTALL_TAG, INSTALL),
    ("code", PICK_MODEL),
    (
        "md",
        "## 1. One example, as the model sees it\n\n`load_task` reads a task from the Hub "
        '(default), an exported folder, a raw MERA folder, or `"sample"`; `render_prompt` '
        "gives the exact prompt text and the media in placeholder order.",
    ),
    (
        "code",
        """\
from IPython.display import display
from mera_multi_hf import TASKS, load_task, render_prompt

print(len(TASKS), "tasks:", ", ".join(TASKS))
ds = load_task("ruhhh_image", source=DATA)
example = ds["test"][0]
text, media = render_prompt("ruhhh_image", example)
print(text)
print("media:", [(name, item.size) for name, item in media])
display(media[0][1])""",
    ),
    (
        "md",
        "## 2. Evaluate\n\nRerunning the same call resumes from the sample log. Under "
        "`accelerate launch --multi_gpu --num_processes N` the same call shards the work.",
    ),
    (
        "code",
        """\
from mera_multi_hf import run_evaluation

options = {"model": MODEL} if MODEL else {}
summary = run_evaluation(tasks="ruhhh_image", data=DATA, limit=LIMIT, output_dir="runs/demo",
                         batch_size=4, no_progress=True, **options)
print(summary["table"])   # the table `mera-multi evaluate` prints""",
    ),
    (
        "md",
        "## 3. Results and the chart\n\n`results.json` records the run (versions, revision, "
        "generation, metric modes, data source and fingerprint, seed, command); "
        "`results.md` is the table, `results.png` the chart (human baseline dashed).",
    ),
    (
        "code",
        """\
import json
from pathlib import Path
from IPython.display import Image, Markdown

run = Path("runs/demo")
doc = json.loads((run / "results.json").read_text())
print("run", doc["run"]["run_id"], "files:", sorted(doc["run"]["files"]))
display(Markdown((run / "results.md").read_text()))
if (run / "results.png").exists():
    display(Image(str(run / "results.png")))
else:
    print("no chart: the gold answers of this split are hidden (score on the MERA site)")""",
    ),
    ("md", "## 4. The submission\n\nOne `<ClassName>.json` per task, ready for the MERA site."),
    (
        "code",
        """\
from mera_multi_hf.reporting.submission import read_submission

answers = read_submission("runs/demo/submission.zip")
print({name: len(rows) for name, rows in answers.items()})""",
    ),
    (
        "md",
        "## 5. Score predictions made elsewhere\n\n`mera-multi score` (here its Python "
        'form) reads a JSONL of `{"id", "prediction"}`, this project\'s sample log or '
        "lm-evaluation-harness logs and writes the same reports.",
    ),
    (
        "code",
        """\
from mera_multi_hf.pipeline.score import score_predictions

test = load_task("ruhhh_image", source="sample")["test"]
Path("preds.jsonl").write_text("".join(json.dumps({"id": m["id"], "prediction": "A"}) + "\\n"
                                       for m in test["meta"]))
result = score_predictions("ruhhh_image", "preds.jsonl", "runs/scored", data="sample")
print(result["metrics"])""",
    ),
]

METRICS = [
    (
        "md",
        "# The MERA Multi metrics\n\nThe four official metrics as `evaluate` modules: exact "
        "match, group exact match, slot F1 and the judge score (see `judge.ipynb` for a "
        "judge). Then the same modules exported as self-contained Hub Spaces.",
    ),
    (INSTALL_TAG, INSTALL),
    (
        "code",
        """\
from mera_multi_hf import load_metric

exact_match = load_metric("exact_match")
print(exact_match.compute(predictions=["a", "B.", "Ответ: C"], references=["A", "B", "C"]))
print(exact_match.compute(predictions=["a", "B"], references=["A", "B"], mode="strict"))
print(exact_match.compute(predictions=["Ответ: C", "D"], references=["C", "C"], extract=True))""",
    ),
    (
        "md",
        "Group exact match (ruHHH): a group of answer pairs about one image and question "
        "counts only when every pair is right.",
    ),
    (
        "code",
        """\
from mera_multi_hf import load_task

test = load_task("ruhhh_image", source="sample")["test"]
golds = test["outputs"]
groups = [m["group_id"] for m in test["meta"]]
predictions = list(golds)
predictions[0] = "B" if golds[0] == "A" else "A"   # one wrong answer spoils its whole group
scores = load_metric("group_exact_match").compute(predictions=predictions, references=golds,
                                                  group_ids=groups)
print(scores)
assert scores["group_exact_match"] < scores["exact_match"] < 1""",
    ),
    (
        "md",
        "Slot F1 and intent exact match (ruSLUn), with the official filters applied to "
        "the raw answer.",
    ),
    (
        "code",
        """\
gold = "{'intent': 'alarm_set', 'slots': [{'time': 'семь утра'}, {'date': 'завтра'}]}"
print(load_metric("slot_f1").compute(
    predictions=['```json\\n{"intent": "alarm_set", "slots": [{"time": "семь утра"}]}\\n```'],
    references=[gold]))""",
    ),
    (
        "md",
        "## Standalone Spaces\n\n`mera-multi metrics export --out DIR` writes each module "
        "with the package code it needs inlined, so it loads without mera-multi-hf; "
        "`mera-multi metrics push --namespace NAME` publishes them, after which "
        '`evaluate.load("NAME/exact_match")` finds the Space on the Hub.',
    ),
    (
        "code",
        """\
import json
from pathlib import Path
import evaluate
from mera_multi_hf.spaces.export import export_metrics

folders = export_metrics("spaces", namespace="mera_multi")
print([sorted(p.name for p in f.iterdir()) for f in folders][0])
standalone = evaluate.load("spaces/group_exact_match").compute(
    predictions=predictions, references=golds, group_ids=groups)
assert standalone == scores
with open("metric_scores.json", "w") as f:
    json.dump({"package": scores, "space": standalone}, f)
print("the standalone Space gives the package's scores:", standalone)""",
    ),
]

BUILD = [
    (
        "md",
        "# Build and publish a MERA task dataset from a raw folder\n\nA raw MERA folder "
        "(`test.json`, `shots.json`, `samples/`, `raw_dataset_meta.json`) becomes Parquet "
        "shards and a dataset card in the Hub's layout; every problem in the folder is "
        "reported at once, with file, id and field.",
    ),
    (INSTALL_TAG, INSTALL),
    (
        "code",
        """\
import shutil
import sys
from pathlib import Path
from mera_multi_hf.demo.sample_data import bundled_sample

raw = Path("raw/ruHHH-Image")   # put your own raw folder here
shutil.copytree(bundled_sample(), raw, dirs_exist_ok=True)
print(sorted(p.name for p in raw.iterdir()))""",
    ),
    (
        "md",
        "## Build\n\nThe output folder must be new, empty or an earlier export (a folder "
        "holding other files is refused, with or without `--overwrite`); "
        "`--internal-with-answers` keeps the hidden answers of a private task (never pushed).",
    ),
    (
        "code",
        """\
!{sys.executable} -m mera_multi_hf build ruhhh_image --raw raw/ruHHH-Image --out hub/ruHHH-Image""",
    ),
    (
        "code",
        """\
import datasets

ds = datasets.load_dataset("hub/ruHHH-Image")
print(ds)
print(Path("hub/ruHHH-Image/README.md").read_text()[:600])""",
    ),
    (
        "md",
        "## Publish\n\nThis cell uploads only when a Hub token is set (`HF_TOKEN`, or a "
        "Colab secret of that name). Change `REPO_ID` to a repository of yours.",
    ),
    (
        "code",
        """\
import os

REPO_ID = "YOUR-HF-NAME/ruHHH-Image-copy"   # <-- PLACEHOLDER
token = os.environ.get("HF_TOKEN")
try:
    from google.colab import userdata
    token = token or userdata.get("HF_TOKEN")
except Exception:   # not on Colab, or no such secret
    pass
if token:
    from mera_multi_hf.data.publish import push
    print("published", push("hub/ruHHH-Image", REPO_ID, private=True, token=token))
else:
    print("no HF_TOKEN: the dataset stays local in hub/ruHHH-Image")""",
    ),
]

JUDGE = [
    (
        "md",
        "# The MERA answer judge: serve it, measure its agreement, train one\n\nOn a GPU "
        "runtime this uses the official judge `MERA-evaluation/MERA_Answer_judge`; elsewhere "
        "the built-in tiny random judge (`mera-multi models --path judge`), so the steps "
        "run anywhere but its labels are noise.",
    ),
    (INSTALL_TAG, INSTALL),
    (
        "code",
        """\
import sys
import torch
from mera_multi_hf.demo.tiny_models import family_model_path

GPU = torch.cuda.is_available()
DEVICE = "cuda" if GPU else "cpu"
if GPU:
    JUDGE = "MERA-evaluation/MERA_Answer_judge"
else:
    JUDGE = str(family_model_path("judge"))   # what `mera-multi models --path judge` prints
print(DEVICE, JUDGE)""",
    ),
    (
        "md",
        "## Serve\n\n`mera-multi judge serve` gives a vLLM-style `/classify` route (plus "
        "`/tokenizer_info`, `/tokenize`, `/detokenize`, `/health`); add `--api-key` to "
        "require a Bearer token.",
    ),
    (
        "code",
        """\
import socket
import subprocess
import time
import requests

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    PORT = s.getsockname()[1]
server = subprocess.Popen([sys.executable, "-m", "mera_multi_hf", "judge", "serve", "--model", JUDGE,
                           "--port", str(PORT), "--device", DEVICE])
URL = f"http://127.0.0.1:{PORT}"
for _ in range(600):
    try:
        if requests.get(URL + "/health", timeout=1).ok:
            break
    except requests.ConnectionError:
        time.sleep(0.1)
print(requests.get(URL + "/tokenizer_info").json())""",
    ),
    (
        "md",
        "## Judge scores through the served judge\n\nThe separator comes from the "
        "server's `/tokenizer_info`; with vLLM pass `judge_tokenizer=` instead.",
    ),
    (
        "code",
        """\
from mera_multi_hf import load_metric

judge_score = load_metric("judge_score")
print(judge_score.compute(predictions=["синий", "Думаю... ОТВЕТ: B", "красный"],
                          references=["синий", "B", "синий"],
                          prompts=["Какого цвета небо?", "A или B?", "Какого цвета небо?"],
                          judge_url=URL + "/classify"))""",
    ),
    (
        "md",
        "## Agreement with human labels\n\nOne labelled answer per line: "
        '`{"prompt", "gold", "prediction", "label"}`.',
    ),
    (
        "code",
        """\
import json
from pathlib import Path

rows = [("Какого цвета небо?", "синий", "синий", 1), ("Какого цвета небо?", "синий", "красный", 0),
        ("A или B?", "B", "ОТВЕТ: B", 1), ("A или B?", "B", "ОТВЕТ: A", 0),
        ("Сколько предметов?", ["четыре", "4"], "Ответ: четыре", 1), ("Сколько предметов?", "4", "два", 0)]
Path("labelled.jsonl").write_text("".join(
    json.dumps({"prompt": p, "gold": g, "prediction": a, "label": y}, ensure_ascii=False) + "\\n"
    for p, g, a, y in rows * 4))
!{sys.executable} -m mera_multi_hf judge agreement --data labelled.jsonl --url {URL} --out agreement.json""",
    ),
    (
        "md",
        "## Train (fine-tune) a judge\n\nThe same file format; the result loads like any "
        'sequence classifier (`judge=\\"trained-judge\\"`, `judge serve`, vLLM).',
    ),
    (
        "code",
        """\
!{sys.executable} -m mera_multi_hf judge train --data labelled.jsonl --base {JUDGE} --out trained-judge --epochs 1 --max-length 128 --device {DEVICE}
server.terminate()
server.wait(timeout=30)   # the server's exit code is not shown: it was stopped on purpose
print("judge server stopped")""",
    ),
]


def write_all() -> None:
    for name, spec in (
        ("quickstart", QUICKSTART),
        ("metrics", METRICS),
        ("build_dataset", BUILD),
        ("judge", JUDGE),
    ):
        nb = new_notebook(cells=_cells(spec))
        nb.metadata.update(
            {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                "language_info": {"name": "python"},
                "accelerator": "GPU",
                "colab": {"provenance": []},
            }
        )
        nbformat.write(nb, HERE / f"{name}.ipynb")


if __name__ == "__main__":
    write_all()
