"""Secrets are never written: the user-info and secret-looking query values of every URL
are masked wherever a URL is recorded or printed (one helper, provenance.mask_secrets),
no option can be abbreviated past the masking, and a URL's user-info never silently
stands in for --judge-api-key."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mera_multi_hf.cli import build_parser, main
from mera_multi_hf.errors import MeraError
from mera_multi_hf.judge import HttpJudge
from mera_multi_hf.provenance import mask_secrets

SECRET_URL = ("https://alice:hunter2@judge.example:8443/classify?model=j&token=tok123"
              "&API_KEY=key456&X-Amz-Signature=sig789&sig=s0&password=pw0&access_token=at0")
SECRETS = ("alice", "hunter2", "tok123", "key456", "sig789", "s0&", "pw0", "at0")


def test_every_secret_part_of_a_url_is_masked():
    masked = mask_secrets(f"failed at {SECRET_URL} (twice)")
    assert not any(secret in masked for secret in SECRETS), masked
    assert "judge.example:8443/classify?model=j&token=***" in masked and masked.endswith(" (twice)")
    assert mask_secrets("http://127.0.0.1:8000/v1?page=2") == "http://127.0.0.1:8000/v1?page=2"


def test_a_served_judge_records_and_reports_its_url_masked():
    judge = HttpJudge(SECRET_URL, sep="[SEP]", retries=0)
    recorded = json.dumps(judge.describe())
    assert not any(secret in recorded for secret in SECRETS), recorded
    dead = HttpJudge("http://bob:pw-secret@127.0.0.1:9/classify?token=t-secret", sep="[SEP]",
                     retries=0, timeout=2)
    with pytest.raises(MeraError) as err:
        dead.call("/classify", {"input": ["x"]})
    assert "pw-secret" not in str(err.value) and "t-secret" not in str(err.value)


def test_user_info_together_with_an_api_key_is_refused():
    with pytest.raises(MeraError, match="give the key once"):
        HttpJudge("http://bob:pw@127.0.0.1:9/classify", sep="[SEP]", api_key="k")


def test_errors_printed_by_the_cli_are_masked(tmp_path, capsys):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"id": 1, "prediction": "A"}) + "\n")
    assert main(["score", "--task", "ruhhh_image", "--predictions", str(predictions), "--data",
                 "sample", "--out", str(tmp_path / "o"), "--judge-url",
                 "ftp://u:pw-secret@x/?token=t"]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert "judge_url 'ftp://***@x/?token=***' is not" in err and err.startswith("mera-multi: error: ")
    assert "pw-secret" not in err and "token=t'" not in err


def _parsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(getattr(action, "choices", None), dict):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_no_parser_takes_an_abbreviated_option():
    from mera_multi_hf.evaluate_cmd import options_parser

    parsers = list(_parsers(build_parser())) + [options_parser()]
    assert len(parsers) > 8 and all(p.allow_abbrev is False for p in parsers)


@pytest.mark.parametrize("command", ["score", "evaluate"])
def test_an_abbreviated_secret_option_is_refused_not_recorded(tmp_path, command):
    out = tmp_path / "out"
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"id": i, "prediction": "A"}) + "\n"
                                   for i in range(1, 27)))
    args = (["score", "--task", "ruhhh_image", "--predictions", str(predictions), "--out"]
            if command == "score" else ["evaluate", "--limit", "1", "--no-progress",
                                        "--output-dir"])
    done = subprocess.run([sys.executable, "-m", "mera_multi_hf", *args, str(out),
                           "--data", "sample", "--judge-api", "SEKRET-123"],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    assert done.returncode == 2 and "unrecognized arguments: --judge-api" in done.stderr
    assert "SEKRET" not in done.stderr  # not even echoed back
    written = [p.read_bytes() for p in out.rglob("*") if p.is_file()] if out.exists() else []
    assert not any(b"SEKRET" in data for data in written)


def test_a_chat_server_url_is_recorded_and_reported_masked():
    from mera_multi_hf.runner.backends.openai import OpenAIBackend
    from mera_multi_hf.runner.request import Request

    backend = OpenAIBackend("served", "http://carol:pw-secret@127.0.0.1:9/v1?api_key=k-secret",
                            max_retries=0, timeout=2)
    recorded = json.dumps(backend.info())
    assert "pw-secret" not in recorded and "k-secret" not in recorded
    with pytest.raises(MeraError) as err:
        backend.generate([Request("ruhhh_image", "test", 1, "hi", [], 4)])
    assert "unreachable" in str(err.value)
    assert "pw-secret" not in str(err.value) and "k-secret" not in str(err.value)
