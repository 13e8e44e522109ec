"""`mera-multi metrics export|push`: Space folders that compute what the package computes,
loaded with `evaluate.load` in a Python that cannot import mera_multi_hf."""

from __future__ import annotations

import ast
import doctest
import io
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from mera_multi_hf import load_metric
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.judge.choose import judge_example_scores
from mera_multi_hf.scoring.metric_exact_match import exact_match_scores
from mera_multi_hf.scoring.metric_groups import group_mean
from mera_multi_hf.spaces.export import export_metrics
from mera_multi_hf.spaces.flat_modules import flat_folder
from mera_multi_hf.spaces.loading import METRICS

REPO = Path(__file__).resolve().parent.parent
GOLD = "{'intent': 'alarm_set', 'slots': [{'time': 'семь утра'}, {'date': 'завтра'}]}"
# (metric, compute kwargs): the table both sides compute.
CASES = [
    (
        "exact_match",
        dict(predictions=["a", "B.", "Ответ: C", " A"], references=["A", "B", "C", "A"]),
    ),
    ("exact_match", dict(predictions=["a", "B"], references=["A", "B"], mode="strict")),
    ("exact_match", dict(predictions=["Ответ: (А)", "D"], references=["A", "C"], extract=True)),
    (
        "exact_match",
        dict(
            predictions=["a", "B"],
            references=["A", "B"],
            mode="strict",
            answer_kind="letter",
            choices=["A", "B", "C", "D"],
        ),
    ),
    ("exact_match", dict(predictions=["кошка!", "пёс"], references=[["кот", "Кошка"], ["кот"]])),
    (
        "group_exact_match",
        dict(
            predictions=["A", "B", "a", "B", "A"],
            references=["A", "B", "B", "B", "A"],
            group_ids=[1, 1, 2, 2, 3],
        ),
    ),
    (
        "group_exact_match",
        dict(predictions=["a", "B"], references=["A", "B"], group_ids=[4, 4], mode="strict"),
    ),
    (
        "slot_f1",
        dict(
            predictions=[
                '```json\n{"intent": "alarm_set", "slots": [{"time": "Семь утра"}]}\n```',
                "не знаю",
                '"{\\"intent\\": \\"alarm_set\\"}"',
            ],
            references=[GOLD] * 3,
        ),
    ),
    (
        "slot_f1",
        dict(
            predictions=['{"intent": "SetAlarm", "slots": []}'],
            references=["{'intent': 'SetAlarm', 'slots': []}"],
            case_insensitive=True,
        ),
    ),
]
JUDGE_CASE = dict(
    predictions=[
        "синий",
        "ОТВЕТ: B",
        "Думаю, что четыре. Ответ: четыре",
        "",
        "The answer is A because the picture shows a cat.",
        "красный",
    ],
    references=["синий", "B", "четыре", "да", "A", "синий"],
    prompts=[
        "Какого цвета небо на картинке?",
        "Выберите лучший ответ: A или B.",
        "Сколько предметов изображено?",
        "Звук похож на шум дождя?",
        "Кошка сидит на подоконнике?",
        "Небо?",
    ],
    group_ids=[1, 1, 2, 2, 3, 3],
)

# Run in a fresh interpreter: isolated (-I: no PYTHONPATH, no user site), the checkout
# taken off sys.path and any import of mera_multi_hf refused.
ISOLATED = r"""
import importlib.abc, json, sys
sys.path[:] = [p for p in sys.path if p and p.rstrip("/") != REPO]
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "mera_multi_hf":
            raise ImportError("mera_multi_hf is not visible here")
sys.meta_path.insert(0, Refuse())
try:
    import mera_multi_hf.scoring.metric_inputs
    visible = True
except ImportError:
    visible = False
import evaluate
job = json.load(sys.stdin)
out = {"visible": visible, "results": []}
for name, kwargs in job["cases"]:
    out["results"].append(evaluate.load(job["root"] + "/" + name).compute(**kwargs))
judge = evaluate.load(job["root"] + "/judge_score")
out["judge"] = judge.compute(judge_url=job["judge_url"], **job["judge_case"])
try:
    judge.compute(predictions=["A"], references=["A"], prompts=["?"])
except Exception as err:
    out["no_judge"] = type(err).__name__ + ": " + str(err)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("spaces")
    export_metrics(root, namespace="mera_multi")
    return root


def third_party_imports(source: str) -> set[str]:
    """Top-level names of the non-standard-library modules a source imports (anywhere)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return {n for n in found if n not in sys.stdlib_module_names and n != "__future__"}


def _requirements(folder: Path) -> list[str]:
    return [
        ln.split(">")[0].strip()
        for ln in (folder / "requirements.txt").read_text().splitlines()
        if ln and not ln.startswith("#")
    ]


def test_export_writes_space_folders(exported):
    assert sorted(p.name for p in exported.iterdir() if not p.name.startswith(".")) == sorted(
        METRICS
    )
    for name in METRICS:
        folder = exported / name
        own = {"README.md", "app.py", "requirements.txt", f"{name}.py"}
        siblings = sorted(p.name for p in folder.iterdir() if p.name not in own)
        assert own <= {p.name for p in folder.iterdir()} and "errors.py" in siblings
        card = (folder / "README.md").read_text(encoding="utf-8")
        meta = yaml.safe_load(card.split("---\n")[1])
        assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
        assert 'load_metric("' not in card and f'evaluate.load("mera_multi/{name}")' in card
        requirements = _requirements(folder)
        assert "evaluate" in requirements and "mera-multi-hf" not in requirements
        for file in folder.glob("*.py"):
            source = file.read_text(encoding="utf-8")
            tree = ast.parse(source)
            imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
            assert not any((m or "").startswith("mera_multi_hf") for m in imported), file
            # one module per import line (evaluate's import scanner misreads `import a, b`)
            assert not [ln for ln in source.splitlines() if ln.startswith("import ") and "," in ln]
            # every third-party import is named (a local judge's transformers/torch are
            # optional; gradio, app.py's, comes with the Space SDK of the card)
            optional = {"transformers", "torch", "gradio"}
            assert third_party_imports(source) - optional <= set(requirements), file
        # the module names every sibling in an unindented `from .x import` line (evaluate
        # copies only the module's own relative imports), and every relative import of
        # every file is a sibling that is there
        module = (folder / f"{name}.py").read_text(encoding="utf-8").splitlines()
        for sibling in siblings:
            assert any(ln.startswith(f"from .{sibling[:-3]} import ") for ln in module), sibling
        for file in folder.glob("*.py"):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level:
                    assert node.level == 1 and f"{node.module}.py" in siblings, (file, node.module)
        for dist in requirements:
            assert __import__("importlib.metadata").metadata.version(dist)
    judge_reqs = _requirements(exported / "judge_score")
    assert {"certifi", "urllib3", "numpy"} <= set(judge_reqs)


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def test_committed_folders_are_what_export_writes(exported):
    """metrics/<name>/ is the export, file for file and byte for byte."""
    committed = REPO / "metrics"
    assert sorted(p.name for p in committed.iterdir() if p.is_dir()) == sorted(METRICS)
    for name in METRICS:
        assert _tree(committed / name) == _tree(exported / name), (
            f"metrics/{name}/ is not what the export writes: run `mera-multi metrics export "
            f"--out DIR` and copy DIR/{name}/ over metrics/{name}/"
        )


def test_each_space_carries_only_the_modules_its_module_imports(exported):
    carried = {
        name: {p.name for p in (exported / name).glob("*.py")} - {"app.py", f"{name}.py"}
        for name in METRICS
    }
    assert carried["exact_match"] == {
        "declarations.py",
        "errors.py",
        "metric_inputs.py",
        "metric_exact_match.py",
        "metric_extraction.py",
        "task_options.py",  # the task table, written out (no task declarations ride along)
    }
    assert "task_options.py" in carried["group_exact_match"]
    assert "table.py" not in carried["exact_match"] and "spec.py" not in carried["exact_match"]
    assert carried["slot_f1"] == {
        "declarations.py",
        "errors.py",
        "metric_inputs.py",
        "metric_ruslun.py",
        "filters.py",
    }
    assert "judges.py" in carried["judge_score"] and "filters.py" not in carried["judge_score"]
    # a copied module is the package's source with only its package imports rewritten
    package = (REPO / "mera_multi_hf" / "judge" / "judges.py").read_text(encoding="utf-8")
    flat = (exported / "judge_score" / "judges.py").read_text(encoding="utf-8")
    assert [line for line in flat.splitlines() if "import" not in line] == [
        line for line in package.splitlines() if "import" not in line
    ]


def test_flattening_rewrites_imports_from_any_depth():
    """A module below a sub-package imports with two dots; flat, it reads one."""
    files = flat_folder("data.raw.records")
    assert "records.py" in files and "errors.py" in files
    for text in files.values():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 and f"{node.module}.py" in files, node.module
    with pytest.raises(MeraError, match="single-file modules only.*outputs is a package"):
        flat_folder("spaces.export")  # it imports the outputs package


def test_load_metric_task_fills_the_declared_options():
    em = load_metric("exact_match", task="commonvideoqa")
    assert em.compute(predictions=["a", "B"], references=["A", "B"]) == load_metric(
        "exact_match"
    ).compute(predictions=["a", "B"], references=["A", "B"], mode="strict")
    assert em.compute(predictions=["a"], references=["A"], mode="mera") == {"exact_match": 1.0}


def test_exported_modules_match_the_package_without_it(exported, served_judge):
    job = {
        "root": str(exported),
        "cases": CASES,
        "judge_url": served_judge.url + "/classify",
        "judge_case": JUDGE_CASE,
    }
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(exported.parent / "modules-isolated"))
    script = ISOLATED.replace("REPO", repr(str(REPO)), 1)
    proc = subprocess.run(
        [sys.executable, "-I", "-c", script],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        cwd=exported.parent,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["visible"] is False
    expected = [load_metric(name).compute(**kwargs) for name, kwargs in CASES]
    assert out["results"] == expected
    assert expected[0] == {"exact_match": 0.5} and expected[2]["exact_match_extracted"] == 0.5
    scores = judge_example_scores(
        JUDGE_CASE["prompts"],
        JUDGE_CASE["references"],
        JUDGE_CASE["predictions"],
        judge_url=served_judge.url,
    )
    assert out["judge"] == {
        "judge_score": float(scores.mean()),
        "group_judge_score": group_mean(scores, JUDGE_CASE["group_ids"]),
    }
    assert out["no_judge"].startswith("MeraError: no judge configured")
    assert exact_match_scores(["a"], ["A"]).tolist() == [1]


class _Recorder(BaseHTTPRequestHandler):
    seen: list = []

    def do_GET(self):  # noqa: N802 - http.server's naming
        self.seen.append(self.path)
        self.send_response(500)
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args):
        pass


def test_push_offline_fails_in_one_line_without_a_request(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = dict(
            os.environ,
            HF_HUB_OFFLINE="1",
            HF_ENDPOINT=f"http://127.0.0.1:{server.server_address[1]}",
        )
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mera_multi_hf",
                "metrics",
                "push",
                "--namespace",
                "someone",
                "--token",
                "hf_x",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
    finally:
        server.shutdown()
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "HF_HUB_OFFLINE" in proc.stderr
    assert _Recorder.seen == []


def test_cli_export(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mera_multi_hf",
            "metrics",
            "export",
            "--out",
            str(tmp_path / "spaces"),
            "--namespace",
            "acme",
            "--metric",
            "slot_f1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in (tmp_path / "spaces").iterdir() if not p.name.startswith(".")] == [
        "slot_f1"
    ]
    card = (tmp_path / "spaces" / "slot_f1" / "README.md").read_text(encoding="utf-8")
    assert 'evaluate.load("acme/slot_f1")' in card
    bad = subprocess.run(
        [sys.executable, "-m", "mera_multi_hf", "metrics", "export"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "required: --out" in bad.stderr
    assert bad.stderr.count("\n") == 1  # one line, no usage dump


CARD_BLOCK = re.compile(r"^```python\n(.*?)^```$", flags=re.DOTALL | re.MULTILINE)


def test_every_metric_card_block_runs_and_gives_the_numbers_it_shows(
    tmp_path, served_judge, monkeypatch
):
    """Each committed card's python blocks, as doctests in order (one namespace per card),
    from a folder holding an export named as the cards' Space names (how the cards say to
    load them offline); the judge card's served judge is the tiny one on 127.0.0.1."""
    export_metrics(tmp_path / "mera_multi", namespace="mera_multi")
    monkeypatch.chdir(tmp_path)
    parser = doctest.DocTestParser()
    flags = doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL
    ran = 0
    for name in METRICS:
        card = (REPO / "metrics" / name / "README.md").read_text(encoding="utf-8")
        blocks = CARD_BLOCK.findall(card)
        assert len(blocks) >= 2, name
        namespace: dict = {}
        for i, block in enumerate(blocks):
            assert block.startswith(">>> "), f"{name} block {i} is not a doctest"
            block = block.replace("http://127.0.0.1:8000", served_judge.url)
            test = parser.get_doctest(block, namespace, f"{name}[{i}]", None, 0)
            out = io.StringIO()
            runner = doctest.DocTestRunner(optionflags=flags)
            runner.run(test, out=out.write, clear_globs=False)
            assert runner.summarize(verbose=False).failed == 0, out.getvalue()
            namespace, ran = test.globs, ran + len(test.examples)  # the next block goes on
    assert ran >= 20


@pytest.mark.parametrize(
    "load_args, load_kwargs, compute_kwargs",
    [
        (("commonvideoqa",), {}, {}),  # evaluate's config_name
        ((), {"task": "commonvideoqa"}, {}),
        ((), {}, {"task": "commonvideoqa"}),
        (("CommonVideoQA",), {}, {"task": "commonvideoqa"}),
    ],
)
def test_a_task_key_gives_the_video_tasks_strict_exact_match(
    load_args, load_kwargs, compute_kwargs
):
    """The committed folder, loaded by evaluate itself: a video task's EM is strict."""
    import evaluate

    plain = evaluate.load(str(REPO / "metrics/exact_match"))
    assert plain.compute(predictions=["a"], references=["A"]) == {"exact_match": 1.0}
    em = evaluate.load(str(REPO / "metrics/exact_match"), *load_args, **load_kwargs)
    got = em.compute(predictions=["a", "B"], references=["A", "B"], **compute_kwargs)
    assert got == {"exact_match": 0.5}
    group = evaluate.load(str(REPO / "metrics/group_exact_match"), *load_args, **load_kwargs)
    got = group.compute(
        predictions=["a", "B"], references=["A", "B"], group_ids=[1, 2], **compute_kwargs
    )
    assert got == {"group_exact_match": 0.5, "exact_match": 0.5}


def test_an_unknown_or_a_second_task_is_one_value_error():
    import evaluate

    folder = str(REPO / "metrics/exact_match")
    with pytest.raises(
        ValueError, match=r"unknown task 'commonvideo' \(did you mean commonvideoqa"
    ):
        evaluate.load(folder, "commonvideo")
    em = evaluate.load(folder, "ruhhh_image")
    with pytest.raises(ValueError, match="unknown task 'nope'"):
        em.compute(predictions=["a"], references=["A"], task="nope")
    with pytest.raises(ValueError, match="loaded for task 'ruhhh_image' and computed with"):
        em.compute(predictions=["a"], references=["A"], task="commonvideoqa")
    # an explicit option still wins over the task's
    assert em.compute(predictions=["a"], references=["A"], mode="strict") == {"exact_match": 0.0}
