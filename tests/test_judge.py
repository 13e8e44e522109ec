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

import pytest
import requests

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.judge import agreement as agreement_mod
from mera_multi_hf.judge.choose import get_judge, judge_example_scores
from mera_multi_hf.judge.http_judge import HttpJudge
from mera_multi_hf.judge.judges import Judge, judge_scores, raw_inputs, token_windows
from mera_multi_hf.judge.local_judge import LocalJudge
from mera_multi_hf.scoring.metric_groups import group_mean
from mera_multi_hf.serving import judge_server as server_mod

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny_judge import build_tiny_judge  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WINDOW = 24  # small, so that ordinary test texts get windowed


PROMPTS = [
    "Какого цвета небо на картинке?",
    "Выберите лучший ответ: A или B.",
    "Сколько предметов изображено?",
    "Звук похож на шум дождя за окном?",
]
PREDICTIONS = [
    "синий",
    "ОТВЕТ: B",
    "Думаю, что четыре. Ответ: четыре",
    "",
    "Кошка сидит на подоконнике и смотрит на улицу, модель ошиблась. ответ: A",
    "красный",
    "The answer is A because the picture shows a cat.",
    "ответ:",
]
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
def reference(judge_dir):
    """Labels straight from transformers, one text at a time (no project code): the
    classifier's argmax over the text left-truncated to the model's 512 positions."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(judge_dir)
    tok.truncation_side = "left"
    model = AutoModelForSequenceClassification.from_pretrained(judge_dir).eval()

    def labels(texts):
        with torch.inference_mode():
            return [
                int(
                    model(**tok(t, truncation=True, max_length=512, return_tensors="pt"))
                    .logits[0]
                    .argmax()
                )
                for t in texts
            ]

    return labels


def official_inputs(prompt, gold, prediction, sep, tok, window):
    """The judge inputs of one example by the official rule (docs/official-protocol.md,
    "The judge inputs")."""
    texts = [prompt + sep + str(gold) + sep + prediction]
    tail = prediction.split("ОТВЕТ")[-1].strip()
    if tail:
        texts.append(prompt + sep + str(gold) + sep + tail)
    out = []
    for text in texts:
        ids = tok.encode(text)
        out += (
            [tok.decode(ids[:window]), tok.decode(ids[-window:])] if len(ids) > window else [text]
        )
    return out


def official_scores(prompts, golds, preds, sep, tok, window, labels):
    return [
        max(labels(official_inputs(p, g, a, sep, tok, window)))
        for p, g, a in zip(prompts, golds, preds)
    ]


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

LONG_PROMPT = " ".join(["кошка сидит на подоконнике"] * 2100)  # > 7995 tokens, judged twice


# (prompt, gold, prediction, the judge inputs), worked out by hand from the official rule
# (docs/official-protocol.md, "The judge inputs"): prompt, str(gold) and the answer joined
# by [SEP]; a second input with the answer's text after its last "ОТВЕТ", stripped, when
# that is not empty; texts over the window are cut (the long prompt: its own test below).
Q = "Какого цвета небо?"
QS = Q + "[SEP]синий[SEP]"
INPUT_TABLE = [
    (Q, "синий", "синий", [QS + "синий", QS + "синий"]),  # no marker: the whole answer
    (Q, "синий", "  синий ", [QS + "  синий ", QS + "синий"]),  # ... stripped
    (Q, "синий", "Рассуждаю. ОТВЕТ: синий", [QS + "Рассуждаю. ОТВЕТ: синий", QS + ": синий"]),
    (Q, "синий", "Ответ: синий", [QS + "Ответ: синий"] * 2),  # «Ответ» is no marker
    (Q, "синий", "ответ синий", [QS + "ответ синий"] * 2),
    (
        "Кто это?",
        ["кот", "кошка"],
        "ОТВЕТ кошка",  # list gold: its Python repr
        [
            "Кто это?[SEP]['кот', 'кошка'][SEP]ОТВЕТ кошка",
            "Кто это?[SEP]['кот', 'кошка'][SEP]кошка",
        ],
    ),
    ("Кто это?", "кот", "ОТВЕТ", ["Кто это?[SEP]кот[SEP]ОТВЕТ"]),  # empty tail: one input
]


@pytest.fixture(scope="session")
def full_window_judge(judge_dir) -> LocalJudge:
    return LocalJudge(judge_dir, device="cpu")  # the official 7995-token window


@pytest.mark.parametrize("prompt, gold, prediction, expected", INPUT_TABLE)
def test_judge_inputs_follow_the_official_rule(
    prompt, gold, prediction, expected, full_window_judge
):
    assert full_window_judge.inputs(prompt, gold, prediction) == expected


def test_judge_input_table_by_hand():
    assert raw_inputs("P", "g", "x", "|") == ["P|g|x", "P|g|x"]
    assert raw_inputs("P", "g", " x ", "|") == ["P|g| x ", "P|g|x"]
    assert raw_inputs("P", "g", "ОТВЕТ: y", "|") == ["P|g|ОТВЕТ: y", "P|g|: y"]
    assert raw_inputs("P", "g", "Ответ: y", "|") == ["P|g|Ответ: y", "P|g|Ответ: y"]
    assert raw_inputs("P", ["a", "b"], "ОТВЕТ b", "|") == ["P|['a', 'b']|ОТВЕТ b", "P|['a', 'b']|b"]
    assert raw_inputs("P", "g", "ОТВЕТ  ", "|") == ["P|g|ОТВЕТ  "]
    assert raw_inputs("P", "g", "", "|") == ["P|g|"]


def test_the_long_input_is_cut_into_first_and_last_7995_tokens(full_window_judge):
    tok = full_window_judge.tokenizer
    inputs = full_window_judge.inputs(LONG_PROMPT, "кошка", "ОТВЕТ кошка")
    ids = tok.encode(LONG_PROMPT + "[SEP]кошка[SEP]ОТВЕТ кошка")
    assert len(ids) > 7995 and len(inputs) == 4
    first, last = inputs[0], inputs[1]
    assert first.startswith("[CLS] кошка") and last.endswith("[SEP] ответ кошка [SEP]")
    # the windows are 7995 tokens each, special tokens included (counted once more on encode)
    assert len(tok.encode(first, add_special_tokens=False)) == 7995
    assert len(tok.encode(last, add_special_tokens=False)) == 7995


def test_token_windows_small_window(local_judge):
    tok = local_judge.tokenizer
    short = "синий [SEP] синий"
    long = " ".join(PROMPTS * 3) + " [SEP] синий [SEP] красный"
    ids = tok.encode(long)
    assert len(ids) > WINDOW and len(tok.encode(short)) <= WINDOW
    windows = token_windows([short, long], tok, WINDOW)
    assert windows[0] == [short]
    assert windows[1] == [tok.decode(ids[:WINDOW]), tok.decode(ids[-WINDOW:])]
    assert "[SEP]" in windows[1][1]  # the separator survives the decode round trip
    with pytest.raises(MeraError, match="must be positive"):
        token_windows([short], tok, 0)


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
    preds = ["синий", "ОТВЕТ синий", "красный", "ОТВЕТ: нет", "b", "Ответ: синий"]
    golds = ["синий", "синий", "синий", "да", ["a", "b"], "синий"]
    scores = judge_scores(judge, preds, golds, ["q"] * 6)
    # 2nd: the full answer is wrong but its ОТВЕТ part is right -> max = 1; 5th: the gold
    # part is "['a', 'b']", never equal to "b"; 6th: «Ответ» is no marker
    assert scores.tolist() == [1, 1, 0, 0, 0, 0]
    # each distinct text is classified once: 4 answers need one text; the 2nd's ОТВЕТ
    # text "q|синий|синий" is the 1st's; only "ОТВЕТ: нет" adds a second one
    assert len(judge.seen) == 7 and len(set(judge.seen)) == 7
    assert group_mean(scores, [1, 1, 2, 2, 3, 3]) == pytest.approx(1 / 3)
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
    with pytest.raises(MeraError, match="judge_tokenizer is for a served judge"):
        get_judge("some/judge", judge_tokenizer="x")
    with pytest.raises(MeraError, match="not an http"):
        HttpJudge("127.0.0.1:8000", sep="[SEP]")
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(MeraError) as err:
        get_judge(judge_url=url, retries=0)
    message = str(err.value)
    assert "separator token" in message and "--judge-tokenizer" in message
    assert "\n" not in message and url in message


def test_missing_local_judge_is_a_clear_error(tmp_path):
    with pytest.raises(MeraError, match="does not exist"):
        LocalJudge(str(tmp_path / "nowhere"))
    with pytest.raises(MeraError, match="could not load the judge model"):
        LocalJudge(str(tmp_path))  # a folder, but no model in it


# ---------------------------------------------------------------------------------
# Local and served judges agree.


def test_local_and_http_backends_match_transformers(local_judge, served, judge_dir, reference):
    preds, golds, prompts = _examples()
    tok = local_judge.tokenizer
    per_example = [
        official_inputs(p, g, a, "[SEP]", tok, WINDOW) for p, g, a in zip(prompts, golds, preds)
    ]
    texts = [t for per in per_example for t in per]
    expected_labels = reference(texts)
    assert set(expected_labels) == {0, 1}, "the test needs both labels to mean anything"
    assert local_judge.labels(texts) == expected_labels
    for options in ({"batch_size": 1, "concurrency": 4}, {"batch_size": 5, "concurrency": 2}):
        http = HttpJudge(served.url, tokenizer=judge_dir, window=WINDOW, backoff=0.01, **options)
        assert http.labels(texts) == expected_labels
    assert http.model == judge_dir  # asked /v1/models for the served name
    expected = [max(reference(per)) for per in per_example]
    assert 0 < sum(expected) < len(expected)
    assert judge_scores(local_judge, preds, golds, prompts).tolist() == expected
    assert judge_scores(http, preds, golds, prompts).tolist() == expected
    # with no tokenizer given, the served judge learns SEP and tokenizes through the server
    bare = HttpJudge(served.url, window=WINDOW, backoff=0.01)
    assert bare.sep == "[SEP]" and bare.describe()["tokenizer"] == "server /tokenize"
    assert bare.inputs_many(prompts, golds, preds) == per_example
    assert judge_scores(bare, preds, golds, prompts).tolist() == expected


def test_server_protocol(served, judge_dir, local_judge, reference):
    assert requests.get(served.url + "/health").json() == {"status": "ok"}
    models = requests.get(served.url + "/v1/models").json()
    assert models["data"][0]["id"] == judge_dir and models["data"][0]["sep_token"] == "[SEP]"
    info = requests.get(served.url + "/tokenizer_info").json()
    assert info["sep_token"] == "[SEP]" and info["cls_token"] == "[CLS]"
    tok = local_judge.tokenizer
    toks = requests.post(served.url + "/tokenize", json={"prompt": "кошка [SEP] да"}).json()
    assert toks["tokens"] == tok.encode("кошка [SEP] да") and toks["count"] == len(toks["tokens"])
    back = requests.post(served.url + "/detokenize", json={"tokens": toks["tokens"][1:-1]}).json()
    assert back == {"prompt": tok.decode(toks["tokens"][1:-1])}
    body = {"model": judge_dir, "input": ["синий [SEP] да", "нет"], "truncate_prompt_tokens": 8192}
    answer = requests.post(served.url + "/classify", json=body).json()
    assert answer["object"] == "list" and answer["model"] == judge_dir
    assert [d["index"] for d in answer["data"]] == [0, 1]
    for item, label in zip(answer["data"], reference(body["input"])):
        assert item["num_classes"] == 2 and sum(item["probs"]) == pytest.approx(1, abs=1e-5)
        assert item["label"] == ("correct" if label == 1 else "incorrect")
    # truncate_prompt_tokens keeps the last tokens, as vLLM does
    long = " ".join(PROMPTS * 4)
    cut = requests.post(
        served.url + "/classify", json={"input": long, "truncate_prompt_tokens": 6}
    ).json()["data"][0]
    ids = tok(long, add_special_tokens=False)["input_ids"]
    tail = tok.decode(ids[-4:])  # 6 tokens = [CLS] + the last 4 + [SEP]
    assert cut["probs"] == pytest.approx(local_judge.probs([tail])[0], abs=1e-5)
    bad = requests.post(served.url + "/classify", json={"model": "other", "input": "x"})
    assert bad.status_code == 404 and "does not exist" in bad.json()["message"]


@pytest.mark.parametrize(
    "body, code, message",
    [
        ({"input": 3}, 400, "`input` must be"),
        ({"input": []}, 400, "`input` must be"),
        ({"input": ["a", 1]}, 400, "`input` must be"),
        ({"model": ["a"], "input": "x"}, 400, "`model` must be a string"),
        ({"model": {"a": 1}, "input": "x"}, 400, "`model` must be a string"),
        ({"input": "x", "truncate_prompt_tokens": True}, 400, "truncate_prompt_tokens"),
        ({"input": "x", "truncate_prompt_tokens": 0}, 400, "truncate_prompt_tokens"),
        (
            {"input": "x", "truncate_prompt_tokens": "6"},
            400,
            "`truncate_prompt_tokens` must be a positive integer, not '6'",
        ),
        ({"input": "x\udfff"}, 400, "lone surrogate"),
        ({}, 400, "`input` is missing"),
        (b"[" * 100000 + b"]" * 100000, 400, ""),
        (b"{oops", 400, "not JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"input": "\xff"}', 400, ""),  # not UTF-8
    ],
)
def test_server_answers_bad_requests_with_json_4xx(served, body, code, message):
    kwargs = (
        {"json": body}
        if isinstance(body, dict)
        else {"data": body, "headers": {"Content-Type": "application/json"}}
    )
    resp = requests.post(served.url + "/classify", **kwargs)
    assert resp.status_code == code
    answer = resp.json()
    assert answer["object"] == "error" and answer["code"] == code and message in answer["message"]
    assert requests.post(served.url + "/tokenize", json={"prompt": 1}).status_code == 400
    assert requests.post(served.url + "/detokenize", json={"tokens": [-1]}).status_code == 400


def test_wrong_model_name_fails_fast_with_the_reason(served):
    judge = HttpJudge(
        served.url + "/classify", model="no-such-judge", sep="[SEP]", retries=5, backoff=1.0
    )
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


@pytest.mark.parametrize(
    "status, body, problem, attempts",
    [
        (200, b"<html>not json</html>", "not JSON", 1),
        (200, json.dumps({"data": [{"label": "x"}]}).encode(), "no data", 1),
        (200, json.dumps({"data": []}).encode(), "expected 1 probability", 1),
        (200, json.dumps({"data": [{"probs": [1.0]}]}).encode(), "2\\+ classes", 1),
        (503, b"overloaded", "HTTP 503", 3),  # the project's retry policy: 5xx is retried
    ],
)
def test_garbage_answers_give_a_clear_error(status, body, problem, attempts):
    handler = type("Handler", (_Garbage,), {"replies": [(status, body)], "hits": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/classify"
        judge = HttpJudge(url, model="j", sep="[SEP]", tokenizer=None, retries=2, backoff=0.01)
        with pytest.raises(MeraError, match=problem) as err:
            judge.labels(["a"])
        assert url in str(err.value) and "\n" not in str(err.value)
        assert handler.hits == ["/classify"] * attempts
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------------
# The evaluate module and the commands with a real judge.


def test_judge_score_module_local_and_served(judge_dir, served, reference, local_judge):
    from mera_multi_hf import load_metric

    preds, golds, prompts = _examples(12)
    golds = [g if isinstance(g, str) else g[0] for g in golds]
    groups = [i // 3 for i in range(12)]
    expected = official_scores(
        prompts, golds, preds, "[SEP]", local_judge.tokenizer, WINDOW, reference
    )
    by_group = [min(expected[i : i + 3]) for i in range(0, 12, 3)]
    module = load_metric("judge_score")
    local = module.compute(
        predictions=preds,
        references=golds,
        prompts=prompts,
        judge=judge_dir,
        group_ids=groups,
        judge_options={"window": WINDOW, "device": "cpu"},
    )
    served_result = module.compute(
        predictions=preds,
        references=golds,
        prompts=prompts,
        judge_url=served.url,
        judge_tokenizer=judge_dir,
        group_ids=groups,
        judge_options={"window": WINDOW, "backoff": 0.01},
    )
    assert (
        local
        == served_result
        == {
            "judge_score": pytest.approx(sum(expected) / 12),
            "group_judge_score": pytest.approx(sum(by_group) / 4),
        }
    )
    assert 0 < local["judge_score"] < 1


def test_agreement_report_hand_cases():
    report = agreement_mod.agreement_report([1, 1, 1, 0, 0, 0, 1, 0], [1, 1, 0, 0, 0, 1, 1, 0])
    assert report["confusion"] == {"tn": 3, "fp": 1, "fn": 1, "tp": 3}
    assert report["accuracy"] == 0.75
    # po = .75, pe = .5*.5 + .5*.5 = .5 -> kappa = (.75 - .5) / .5
    assert report["cohen_kappa"] == pytest.approx(0.5)
    assert agreement_mod.agreement_report([1, 1], [1, 1])["cohen_kappa"] is None
    # skewed raters: human 1,1,1,0 / judge 1,1,0,0 -> po = 3/4; pe = 3/4*1/2 + 1/4*1/2 = 1/2
    assert agreement_mod.agreement_report([1, 1, 1, 0], [1, 1, 0, 0])[
        "cohen_kappa"
    ] == pytest.approx((0.75 - 0.5) / 0.5)
    # total disagreement: po = 0, pe = 1/2 -> kappa = -1
    assert agreement_mod.agreement_report([1, 0], [0, 1])["cohen_kappa"] == pytest.approx(-1.0)


def test_cli_agreement(judge_dir, local_judge, reference, tmp_path, capsys):
    from mera_multi_hf.cli.main import main

    preds, golds, prompts = _examples(10)
    human = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1]
    data = tmp_path / "labelled.jsonl"
    data.write_text(
        "\n".join(
            json.dumps({"prompt": p, "gold": g, "prediction": a, "label": h}, ensure_ascii=False)
            for p, g, a, h in zip(prompts, golds, preds, human)
        ),
        encoding="utf-8",
    )
    out = tmp_path / "report.json"
    assert (
        main(
            [
                "judge",
                "agreement",
                "--data",
                str(data),
                "--model",
                judge_dir,
                "--window",
                str(WINDOW),
                "--device",
                "cpu",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads(out.read_text(encoding="utf-8"))
    judged = official_scores(
        prompts, golds, preds, "[SEP]", local_judge.tokenizer, WINDOW, reference
    )
    tp = sum(h == j == 1 for h, j in zip(human, judged))
    tn = sum(h == j == 0 for h, j in zip(human, judged))
    assert report["confusion"]["tp"] == tp and report["confusion"]["tn"] == tn
    assert report["accuracy"] == pytest.approx((tp + tn) / len(human))
    assert "Cohen's kappa" in capsys.readouterr().out


@pytest.mark.parametrize(
    "content, where",
    [
        (
            b'{"prompt": "p", "gold": "g", "prediction": "x", "label": 2}\nnot json\n',
            "line 1: field 'label' must be 0 or 1",
        ),
        (
            b'{"prompt": "p", "gold": "g", "prediction": "x", "label": 1}\nnot json\n',
            "line 2: not JSON",
        ),
        (
            b'{"prompt": "p", "gold": "g\xff", "prediction": "x", "label": 1}\n',
            "line 1: field 'gold' is not valid UTF-8",
        ),
        (
            b'{"prompt": "p", "gold": 5, "prediction": "x", "label": 1}\n',
            "line 1: field 'gold' must be",
        ),
        (
            b'{"prompt": "p", "gold": ["a", null], "prediction": "x", "label": 1}\n',
            "line 1: field 'gold' must be",
        ),
        (
            b'{"prompt": "p", "gold": "g", "prediction": 1, "label": 1}\n',
            "line 1: field 'prediction' must be a string",
        ),
        (
            b'\n{"prompt": "p\xc3", "gold": "g", "prediction": "x", "label": 1}\n',
            "line 2: field 'prompt' is not valid UTF-8",
        ),
        (b'{"prompt": "p", "gold": "g"}\n', "line 1: missing field(s) prediction, label"),
    ],
)
def test_cli_agreement_bad_data_is_one_line_naming_file_line_field(
    content, where, tmp_path, judge_dir, capsys
):
    from mera_multi_hf.cli.main import main

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    assert main(["judge", "agreement", "--data", str(bad), "--model", judge_dir]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{bad}: {where}" in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_cli_agreement_needs_one_judge(tmp_path, capsys):
    from mera_multi_hf.cli.main import main

    data = tmp_path / "x.jsonl"
    data.write_text(
        '{"prompt": "p", "gold": "g", "prediction": "x", "label": 1}\n', encoding="utf-8"
    )
    assert main(["judge", "agreement", "--data", str(data)]) == 2
    assert "exactly one of --model" in capsys.readouterr().err


def test_cli_serve_end_to_end_with_api_key(judge_dir, local_judge, reference):
    """`mera-multi judge serve --api-key` in a subprocess; get_judge(judge_url=...) learns the
    separator from the server and scores like transformers does."""
    key = "s3cret"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mera_multi_hf",
            "judge",
            "serve",
            "--model",
            judge_dir,
            "--port",
            "0",
            "--device",
            "cpu",
            "--api-key",
            key,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        line = proc.stdout.readline()
        assert "serving judge" in line, proc.stderr.read() if proc.poll() is not None else line
        url = line.split(" at ")[1].split()[0]
        base = url.rsplit("/", 1)[0]
        assert requests.get(base + "/health").status_code == 200
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            denied = requests.post(url, json={"input": "x"}, headers=headers)
            assert denied.status_code == 401 and denied.json()["object"] == "error"
        with pytest.raises(MeraError, match="HTTP 401"):
            get_judge(judge_url=url, retries=0)
        judge = get_judge(judge_url=url, api_key=key, window=WINDOW, backoff=0.05)
        assert judge.sep == "[SEP]"
        preds, golds, prompts = _examples(8)
        expected = official_scores(
            prompts, golds, preds, "[SEP]", local_judge.tokenizer, WINDOW, reference
        )
        assert (
            judge_example_scores(
                prompts, golds, preds, judge_url=url, api_key=key, window=WINDOW, backoff=0.05
            ).tolist()
            == expected
        )
        with_tok = get_judge(judge_url=url, judge_tokenizer=judge_dir, api_key=key, window=WINDOW)
        assert judge_scores(with_tok, preds, golds, prompts).tolist() == expected
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_cli_train_learns_labels_the_untrained_judge_gets_wrong(
    judge_dir, local_judge, tmp_path, reference
):
    from mera_multi_hf.cli.main import main

    preds, golds, prompts = _examples(16)
    golds = [g if isinstance(g, str) else g[0] for g in golds]
    texts = [f"{p}[SEP]{g}[SEP]{a}" for p, g, a in zip(prompts, golds, preds)]
    before = reference(texts)
    targets = [1 - b for b in before]  # every label flipped: nothing is right by chance
    assert 0 in targets and 1 in targets
    data = tmp_path / "train.jsonl"
    data.write_text(
        "\n".join(
            json.dumps({"prompt": p, "gold": g, "prediction": a, "label": t}, ensure_ascii=False)
            for p, g, a, t in zip(prompts, golds, preds, targets)
        ),
        encoding="utf-8",
    )
    out = tmp_path / "trained"
    assert (
        main(
            [
                "judge",
                "train",
                "--data",
                str(data),
                "--base",
                judge_dir,
                "--out",
                str(out),
                "--epochs",
                "30",
                "--lr",
                "0.005",
                "--batch-size",
                "16",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    trained = LocalJudge(str(out), device="cpu", window=WINDOW)
    assert trained.labels(texts) == targets
