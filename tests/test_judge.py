"""The judge: input protocol, local and served backends, the server, agreement, the CLI.

The judge under test is a real transformers checkpoint (tiny BERT classifier with a
WordPiece tokenizer trained here), served over real HTTP on 127.0.0.1.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import requests

from mera_multi_hf._paths import bundled_dir, load_module_from_file
from mera_multi_hf.errors import MeraError
from mera_multi_hf.judge import (HttpJudge, Judge, LocalJudge, answer_part, get_judge,
                                 judge_example_scores, judge_scores, raw_inputs, token_windows)
from mera_multi_hf.metric_fns import group_mean

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny_judge import build_tiny_judge  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WINDOW = 24  # small, so that ordinary test texts get windowed

server_mod = load_module_from_file(bundled_dir("judge_model") / "server.py",
                                   "mera_multi_hf._judge_model.server")
agreement_mod = load_module_from_file(bundled_dir("judge_model") / "agreement.py",
                                      "mera_multi_hf._judge_model.agreement")

PROMPTS = ["Какого цвета небо на картинке?", "Выберите лучший ответ: A или B.",
           "Сколько предметов изображено?", "Звук похож на шум дождя за окном?"]
PREDICTIONS = ["синий", "ОТВЕТ: B", "Думаю, что четыре. Ответ: четыре", "",
               "Кошка сидит на подоконнике и смотрит на улицу, модель ошиблась. ответ: A",
               "красный", "The answer is A because the picture shows a cat.", "ответ:"]
GOLDS = ["синий", "B", "четыре", "да", "A", "синий", ["A", "B"], "нет"]


def _examples(n=24):
    preds = [PREDICTIONS[i % len(PREDICTIONS)] for i in range(n)]
    golds = [GOLDS[(i * 3) % len(GOLDS)] for i in range(n)]
    prompts = [PROMPTS[i % len(PROMPTS)] * (1 + i % 3) for i in range(n)]
    return preds, golds, prompts


@pytest.fixture(scope="session")
def judge_dir(tmp_path_factory) -> str:
    return str(build_tiny_judge(tmp_path_factory.mktemp("tiny-judge")))


@pytest.fixture(scope="session")
def local_judge(judge_dir) -> LocalJudge:
    return LocalJudge(judge_dir, device="cpu", batch_size=4, window=WINDOW)


@pytest.fixture(scope="session")
def served(judge_dir):
    server = server_mod.serve(judge_dir, "127.0.0.1", 0, device="cpu", batch_size=8)
    yield server
    server.shutdown()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------
# The input protocol.

def test_answer_part_and_raw_inputs():
    assert answer_part("рассуждение... ОТВЕТ: синий") == "синий"
    assert answer_part("Ответ: A, нет, ответ: B") == "B"      # the last marker, any case
    assert answer_part("ответ:   ") == ""
    assert answer_part("синий") == ""
    assert raw_inputs("P", "g", "x", "|") == ["P|g|x"]
    assert raw_inputs("P", "g", "Ответ: y", "|") == ["P|g|Ответ: y", "P|g|y"]
    assert raw_inputs("P", ["a", "b"], "ответ b", "|") == ["P|a|ответ b", "P|a|b", "P|b|ответ b", "P|b|b"]
    with pytest.raises(MeraError, match="empty list of gold"):
        raw_inputs("P", [], "x", "|")


def test_token_windows_split_long_inputs_into_first_and_last(local_judge):
    tok = local_judge.tokenizer
    short = "синий [SEP] синий"
    long = " ".join(PROMPTS * 3) + " [SEP] синий [SEP] красный"
    ids = tok(long, add_special_tokens=False)["input_ids"]
    assert len(ids) > WINDOW and len(tok(short, add_special_tokens=False)["input_ids"]) <= WINDOW
    windows = token_windows([short, long], tok, WINDOW)
    assert windows[0] == [short]
    first, last = windows[1]
    assert tok(first, add_special_tokens=False)["input_ids"] == ids[:WINDOW]
    assert tok(last, add_special_tokens=False)["input_ids"] == ids[-WINDOW:]
    assert "[SEP]" in last  # the separator survives the decode round trip
    # through a judge: the long input and its "ОТВЕТ" variant both get two windows
    inputs = local_judge.inputs(" ".join(PROMPTS * 3), "синий", "так ОТВЕТ: синий")
    assert len(inputs) == 4
    assert len(local_judge.inputs("?", "да", "да")) == 1


class RuleJudge(Judge):
    """A stand-in backend with a known rule (label 1 iff prediction == gold), so the
    score arithmetic can be checked by hand; the real backends are tested below."""

    sep = "|"

    def __init__(self):
        self.seen: list[str] = []

    def labels(self, texts):
        self.seen += texts
        return [int(t.split("|")[1] == t.split("|")[2]) for t in texts]

    def describe(self):
        return {"backend": "rule", "model": "rule"}


def test_judge_score_math_max_over_inputs_then_mean():
    judge = RuleJudge()
    preds = ["синий", "Ответ: синий", "красный", "ОТВЕТ: нет", "b"]
    golds = ["синий", "синий", "синий", "да", ["a", "b"]]
    scores = judge_scores(judge, preds, golds, ["q"] * 5)
    # 2nd: the full answer is wrong but its ОТВЕТ part is right -> max = 1
    assert scores.tolist() == [1, 1, 0, 0, 1]
    assert len(judge.seen) == 1 + 2 + 1 + 2 + 2
    assert group_mean(scores, [1, 1, 2, 2, 3]) == pytest.approx(2 / 3)
    with pytest.raises(MeraError, match="2 predictions, 1 references"):
        judge_scores(judge, ["a", "b"], ["a"], ["q", "q"])


def test_non_binary_labels_are_refused():
    class Broken(RuleJudge):
        def labels(self, texts):
            return [2 for _ in texts]

    with pytest.raises(MeraError, match="binary classifier"):
        judge_scores(Broken(), ["a"], ["a"], ["q"])


def test_no_judge_configured_is_an_error():
    with pytest.raises(MeraError, match="no judge configured"):
        get_judge()
    with pytest.raises(MeraError, match="no judge configured"):
        judge_example_scores(["q"], ["a"], ["a"])
    with pytest.raises(MeraError, match="not both"):
        get_judge("some/judge", "http://127.0.0.1:1/classify")
    with pytest.raises(MeraError, match="separator token"):
        HttpJudge("http://127.0.0.1:1")
    with pytest.raises(MeraError, match="not an http"):
        HttpJudge("127.0.0.1:8000", sep="[SEP]")


def test_missing_local_judge_is_a_clear_error(tmp_path):
    with pytest.raises(MeraError, match="does not exist"):
        LocalJudge(str(tmp_path / "nowhere"))
    with pytest.raises(MeraError, match="could not load the judge model"):
        LocalJudge(str(tmp_path))  # a folder, but no model in it


# ---------------------------------------------------------------------------------
# Local and served judges agree.

def test_local_and_http_backends_give_identical_labels(local_judge, served, judge_dir):
    preds, golds, prompts = _examples()
    texts = [t for per in local_judge.inputs_many(prompts, golds, preds) for t in per]
    local_probs = local_judge.probs(texts)
    local_labels = local_judge.labels(texts)
    assert set(local_labels) == {0, 1}, "the test needs both labels to mean anything"
    for options in ({"batch_size": 1, "concurrency": 4}, {"batch_size": 5, "concurrency": 2}):
        http = HttpJudge(served.url, tokenizer=judge_dir, window=WINDOW, backoff=0.01, **options)
        assert http.labels(texts) == local_labels
        np.testing.assert_allclose(http.probs(texts), local_probs, atol=1e-5)
    assert http.model == judge_dir  # asked /v1/models for the served name

    local_scores = judge_scores(local_judge, preds, golds, prompts)
    http_scores = judge_scores(http, preds, golds, prompts)
    assert local_scores.tolist() == http_scores.tolist()
    # and the example scores are the max of their inputs' labels
    per_example = local_judge.inputs_many(prompts, golds, preds)
    expected = [max(local_judge.labels(per)) for per in per_example]
    assert local_scores.tolist() == expected


def test_server_protocol(served, judge_dir, local_judge):
    assert requests.get(served.url + "/health").json() == {"status": "ok"}
    models = requests.get(served.url + "/v1/models").json()
    assert models["data"][0]["id"] == judge_dir
    body = {"model": judge_dir, "input": ["синий [SEP] да", "нет"], "truncate_prompt_tokens": 8192}
    answer = requests.post(served.url + "/classify", json=body).json()
    assert answer["object"] == "list" and answer["model"] == judge_dir
    assert [d["index"] for d in answer["data"]] == [0, 1]
    for item, probs in zip(answer["data"], local_judge.probs(body["input"])):
        assert item["num_classes"] == 2 and sum(item["probs"]) == pytest.approx(1, abs=1e-5)
        assert item["label"] == ("correct" if np.argmax(probs) == 1 else "incorrect")
    # truncate_prompt_tokens keeps the last tokens, as vLLM does
    long = " ".join(PROMPTS * 4)
    cut = requests.post(served.url + "/classify",
                        json={"input": long, "truncate_prompt_tokens": 6}).json()["data"][0]
    ids = local_judge.tokenizer(long, add_special_tokens=False)["input_ids"]
    tail = local_judge.tokenizer.decode(ids[-4:])  # 6 tokens = [CLS] + the last 4 + [SEP]
    assert cut["probs"] == pytest.approx(local_judge.probs([tail])[0], abs=1e-5)
    bad = requests.post(served.url + "/classify", json={"model": "other", "input": "x"})
    assert bad.status_code == 404 and "does not exist" in bad.json()["message"]
    assert requests.post(served.url + "/classify", json={"input": 3}).status_code == 400
    assert requests.post(served.url + "/classify", data=b"{oops",
                         headers={"Content-Type": "application/json"}).status_code == 400


def test_wrong_model_name_fails_fast_with_the_reason(served):
    judge = HttpJudge(served.url + "/classify", model="no-such-judge", sep="[SEP]", retries=5,
                      backoff=1.0)
    start = time.perf_counter()
    with pytest.raises(MeraError, match="HTTP 404.*no-such-judge"):
        judge.labels(["x"])
    assert time.perf_counter() - start < 1.0  # a 4xx is not retried


# ---------------------------------------------------------------------------------
# Servers that are down or answer garbage.

def test_server_down_gives_a_clear_error_after_retries():
    url = f"http://127.0.0.1:{_free_port()}/classify"
    judge = HttpJudge(url, model="j", sep="[SEP]", retries=2, backoff=0.01, timeout=2)
    with pytest.raises(MeraError) as err:
        judge.labels(["a", "b"])
    message = str(err.value)
    assert url in message and "3 attempt(s)" in message and "cannot connect" in message


class _Garbage(BaseHTTPRequestHandler):
    replies: list = []
    hits: list = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).hits.append(self.path)
        status, body = type(self).replies[0]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize("status, body, problem", [
    (200, b"<html>not json</html>", "not JSON"),
    (200, json.dumps({"data": [{"label": "x"}]}).encode(), "no data"),
    (200, json.dumps({"data": []}).encode(), "expected 1 probability"),
    (200, json.dumps({"data": [{"probs": [1.0]}]}).encode(), "2\\+ classes"),
    (503, b"overloaded", "HTTP 503"),
])
def test_garbage_answers_give_a_clear_error_after_retries(status, body, problem):
    handler = type("Handler", (_Garbage,), {"replies": [(status, body)], "hits": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/classify"
        judge = HttpJudge(url, model="j", sep="[SEP]", retries=2, backoff=0.01)
        with pytest.raises(MeraError, match=problem) as err:
            judge.labels(["a"])
        assert url in str(err.value)
        assert handler.hits == ["/classify"] * 3  # first try + 2 retries
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------------
# The evaluate module and the commands with a real judge.

def test_judge_score_module_local_and_served(judge_dir, served, local_judge):
    from mera_multi_hf import load_metric

    preds, golds, prompts = _examples(12)
    golds = [g if isinstance(g, str) else g[0] for g in golds]
    groups = [i // 3 for i in range(12)]
    module = load_metric("judge_score")
    local = module.compute(predictions=preds, references=golds, prompts=prompts, judge=judge_dir,
                           group_ids=groups, judge_options={"window": WINDOW, "device": "cpu"})
    served_result = module.compute(
        predictions=preds, references=golds, prompts=prompts, judge_url=served.url,
        group_ids=groups, judge_options={"tokenizer": judge_dir, "window": WINDOW, "backoff": 0.01})
    expected = judge_scores(local_judge, preds, golds, prompts)
    assert local == served_result == {"judge_score": pytest.approx(expected.mean()),
                                      "group_judge_score": pytest.approx(group_mean(expected, groups))}
    assert 0 < local["judge_score"] < 1


def test_agreement_report_hand_case_and_sklearn():
    report = agreement_mod.agreement_report([1, 1, 1, 0, 0, 0, 1, 0], [1, 1, 0, 0, 0, 1, 1, 0])
    assert report["confusion"] == {"tn": 3, "fp": 1, "fn": 1, "tp": 3}
    assert report["accuracy"] == 0.75
    # po = .75, pe = .5*.5 + .5*.5 = .5 -> kappa = (.75 - .5) / .5
    assert report["cohen_kappa"] == pytest.approx(0.5)
    assert agreement_mod.agreement_report([1, 1], [1, 1])["cohen_kappa"] is None
    sklearn = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(1)
    human, judge = rng.integers(0, 2, 200).tolist(), rng.integers(0, 2, 200).tolist()
    assert agreement_mod.agreement_report(human, judge)["cohen_kappa"] == \
        pytest.approx(sklearn.cohen_kappa_score(human, judge))


def test_cli_agreement(judge_dir, local_judge, tmp_path, capsys):
    from mera_multi_hf.cli import main

    preds, golds, prompts = _examples(10)
    human = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1]
    data = tmp_path / "labelled.jsonl"
    data.write_text("\n".join(json.dumps({"prompt": p, "gold": g, "prediction": a, "label": h},
                                         ensure_ascii=False)
                              for p, g, a, h in zip(prompts, golds, preds, human)), encoding="utf-8")
    out = tmp_path / "report.json"
    assert main(["judge", "agreement", "--data", str(data), "--model", judge_dir,
                 "--window", str(WINDOW), "--device", "cpu", "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    judged = judge_scores(local_judge, preds, golds, prompts).tolist()
    assert report == {**agreement_mod.agreement_report(human, judged), "judge": report["judge"]}
    assert "Cohen's kappa" in capsys.readouterr().out

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "p", "gold": "g", "prediction": "x", "label": 2}\nnot json\n',
                   encoding="utf-8")
    assert main(["judge", "agreement", "--data", str(bad), "--model", judge_dir]) == 2
    err = capsys.readouterr().err
    assert "line 1: label must be 0 or 1" in err and "line 2: not JSON" in err
    assert main(["judge", "agreement", "--data", str(data)]) == 2
    assert "exactly one of --model" in capsys.readouterr().err


def test_cli_serve_runs_a_working_server(judge_dir, local_judge):
    proc = subprocess.Popen([sys.executable, "-m", "mera_multi_hf", "judge", "serve", "--model",
                             judge_dir, "--port", "0", "--device", "cpu"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = proc.stdout.readline()
        assert "serving judge" in line, proc.stderr.read() if proc.poll() is not None else line
        url = line.split(" at ")[1].split()[0]
        judge = HttpJudge(url, tokenizer=judge_dir, window=WINDOW, backoff=0.05)
        texts = ["синий [SEP] синий [SEP] синий", "ответ [SEP] нет"]
        assert judge.labels(texts) == local_judge.labels(texts)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_cli_train_fine_tunes_a_judge_that_loads_everywhere(judge_dir, local_judge, tmp_path):
    from mera_multi_hf.cli import main

    preds, golds, prompts = _examples(16)
    golds = [g if isinstance(g, str) else g[0] for g in golds]
    sep = local_judge.sep
    texts = [f"{p}{sep}{g}{sep}{a}" for p, g, a in zip(prompts, golds, preds)]
    before = local_judge.labels(texts)
    assert 0 in before
    data = tmp_path / "train.jsonl"
    data.write_text("\n".join(json.dumps({"prompt": p, "gold": g, "prediction": a, "label": 1},
                                         ensure_ascii=False)
                              for p, g, a in zip(prompts, golds, preds)), encoding="utf-8")
    out = tmp_path / "trained"
    assert main(["judge", "train", "--data", str(data), "--base", judge_dir, "--out", str(out),
                 "--epochs", "5", "--lr", "0.02", "--batch-size", "16", "--device", "cpu"]) == 0
    trained = LocalJudge(str(out), device="cpu", window=WINDOW)
    assert trained.labels(texts) == [1] * len(texts)  # it learned the (all-correct) labels
