"""Secrets are never written: the user-info and secret-looking query values of every URL
are masked wherever a URL is recorded or printed (one helper, masking.mask_secrets),
no option can be abbreviated past the masking, and a URL's user-info never silently
stands in for --judge-api-key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mera_multi_hf.cli.main import build_parser, main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.masking import mask_secrets
from mera_multi_hf.judge.http_judge import HttpJudge

SECRET_URL = (
    "https://alice:hunter2@judge.example:8443/classify?model=j&token=tok123"
    "&API_KEY=key456&X-Amz-Signature=sig789&sig=s0&password=pw0&access_token=at0"
)
SECRETS = ("alice", "hunter2", "tok123", "key456", "sig789", "s0&", "pw0", "at0")


def test_every_secret_part_of_a_url_is_masked():
    masked = mask_secrets(f"failed at {SECRET_URL} (twice)")
    assert not any(secret in masked for secret in SECRETS), masked
    assert "judge.example:8443/classify?model=j&token=***" in masked and masked.endswith(" (twice)")
    assert mask_secrets("http://127.0.0.1:8000/v1?page=2") == "http://127.0.0.1:8000/v1?page=2"


def test_the_patterns_mask_what_the_run_was_not_told():
    # values never registered: the second line of defence, the patterns, masks them
    said = (
        "failed at https://h:1/x?page=2&pwd=rx-pwd1&session=rx-ses2;jwt=rx-jwt3&code=rx-cd4"
        "&k%65y=rx-key5&amp;token=rx-tok6#access_token=rx-frag7 (twice)"
    )
    masked = mask_secrets(said)
    assert "rx-" not in masked, masked
    assert masked.startswith("failed at https://h:1/x?page=2&pwd=***") and masked.endswith(
        "#*** (twice)"
    )


def test_a_served_judge_records_and_reports_its_url_masked():
    judge = HttpJudge(SECRET_URL, sep="[SEP]", retries=0)
    recorded = json.dumps(judge.describe())
    assert not any(secret in recorded for secret in SECRETS), recorded
    dead = HttpJudge(
        "http://bob:pw-secret@127.0.0.1:9/classify?token=t-secret",
        sep="[SEP]",
        retries=0,
        timeout=2,
    )
    with pytest.raises(MeraError) as err:
        dead.call("/classify", {"input": ["x"]})
    assert "pw-secret" not in str(err.value) and "t-secret" not in str(err.value)


def test_user_info_together_with_an_api_key_is_refused():
    with pytest.raises(MeraError, match="give the key once"):
        HttpJudge("http://bob:pw@127.0.0.1:9/classify", sep="[SEP]", api_key="k")


def test_errors_printed_by_the_cli_are_masked(tmp_path, capsys):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps({"id": 1, "prediction": "A"}) + "\n")
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(predictions),
                "--data",
                "sample",
                "--out",
                str(tmp_path / "o"),
                "--judge-url",
                "ftp://u:pw-secret@x/?token=t",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.splitlines()[-1]
    # refused by the option's domain (an http(s) URL), the value not repeated at all
    assert "--judge-url: a malformed URL" in err and err.startswith("mera-multi: error: ")
    assert "pw-secret" not in err and "token=t'" not in err


def _parsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(getattr(action, "choices", None), dict):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_no_parser_takes_an_abbreviated_option():
    from mera_multi_hf.cli.evaluate import options_parser

    parsers = list(_parsers(build_parser())) + [options_parser()]
    assert len(parsers) > 8 and all(p.allow_abbrev is False for p in parsers)


@pytest.mark.parametrize("command", ["score", "evaluate"])
def test_an_abbreviated_secret_option_is_refused_not_recorded(tmp_path, command):
    out = tmp_path / "out"
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(
        "".join(json.dumps({"id": i, "prediction": "A"}) + "\n" for i in range(1, 27))
    )
    args = (
        ["score", "--task", "ruhhh_image", "--predictions", str(predictions), "--out"]
        if command == "score"
        else ["evaluate", "--limit", "1", "--no-progress", "--output-dir"]
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mera_multi_hf",
            *args,
            str(out),
            "--data",
            "sample",
            "--judge-api",
            "SEKRET-123",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
    )
    assert done.returncode == 2 and "unrecognized arguments: --judge-api" in done.stderr
    assert "SEKRET" not in done.stderr  # not even echoed back
    written = [p.read_bytes() for p in out.rglob("*") if p.is_file()] if out.exists() else []
    assert not any(b"SEKRET" in data for data in written)


def test_a_chat_server_url_is_recorded_and_reported_masked():
    from mera_multi_hf.generation.backends.openai import OpenAIBackend
    from mera_multi_hf.generation.request import Request

    backend = OpenAIBackend(
        "served", "http://carol:pw-secret@127.0.0.1:9/v1?api_key=k-secret", max_retries=0, timeout=2
    )
    recorded = json.dumps(backend.info())
    assert "pw-secret" not in recorded and "k-secret" not in recorded
    with pytest.raises(MeraError) as err:
        backend.generate([Request("ruhhh_image", "test", 1, "hi", [], 4)])
    assert "unreachable" in str(err.value)
    assert "pw-secret" not in str(err.value) and "k-secret" not in str(err.value)


def test_a_known_secret_is_masked_in_every_spelling():
    import html
    from urllib.parse import quote, quote_plus

    from mera_multi_hf.core.masking import remember

    secret = 'pa$$ w"ord/é-7781'
    remember(secret)
    remember("abc12")  # under 6 characters: not a secret, ordinary text stays
    forms = [
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        quote(secret, safe=""),
        quote_plus(secret),
        html.escape(secret),
    ]
    for form in forms:
        assert mask_secrets(f"<{form}>") == "<***>", form
    assert mask_secrets("id abc12") == "id abc12"
    data_uri = "data:image/jpeg;base64,/9j/4AAQkeySig+tokenPwd/x=="  # no query in it
    assert mask_secrets(data_uri) == data_uri


def test_the_secrets_an_options_object_holds_are_found_by_value():
    from mera_multi_hf.core.masking import remember_options
    from mera_multi_hf.scoring.options import ScoringOptions

    options = ScoringOptions(
        judge_api_key="jk-unit-6b1d0e",
        judge=("pretrained=x,token=ma-unit-2f3e4d"),
        judge_url=(
            "http://u:pw-unit-8c9b0a@h/classify?pwd=pwd-unit-1a2b3c&k%65y=key-unit-4d5e6f"
            "&page=2#frag-unit-7a8b9c"
        ),
    )
    remember_options(options)
    # where the value turns up later, in any text, it is masked: no pattern needed
    said = (
        "key jk-unit-6b1d0e, list ma-unit-2f3e4d, pw-unit-8c9b0a, pwd-unit-1a2b3c, "
        "key-unit-4d5e6f, frag-unit-7a8b9c; not page=2"
    )
    assert mask_secrets(said) == "key ***, list ***, ***, ***, ***, ***; not page=2"


def test_the_console_logging_warnings_and_tracebacks_are_masked(capsys, caplog):
    import logging
    import warnings

    from mera_multi_hf.core.masking import excepthook, masked_console, remember

    remember("console-unit-5e4d3c")
    with masked_console():
        print("printed console-unit-5e4d3c")
        print("to stderr console-unit-5e4d3c", file=sys.stderr)
        logging.getLogger("mera.test").warning("logged %s", "console-unit-5e4d3c")
        try:
            raise RuntimeError("raised console-unit-5e4d3c")
        except RuntimeError as err:
            logging.getLogger("mera.test").exception("failed")
            excepthook(type(err), err, err.__traceback__)
    with pytest.warns(UserWarning) as warned, masked_console():
        warnings.warn("warned console-unit-5e4d3c", stacklevel=1)
    out, err = capsys.readouterr()
    assert "printed ***" in out and "to stderr ***" in err
    assert [str(w.message) for w in warned] == ["warned ***"]
    assert "RuntimeError: raised ***" in err and "logged ***" in caplog.text
    assert "raised ***" in caplog.text
    assert "console-unit-5e4d3c" not in out + err + caplog.text


def test_a_secret_in_the_stored_answers_is_reported_in_one_line_not_rewritten(tmp_path, capsys):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(
        "".join(json.dumps({"id": i, "prediction": "A"}) + "\n" for i in range(1, 26))
        + json.dumps({"id": 26, "prediction": "A jk-data-0f1e2d"})
        + "\n"
    )
    out = tmp_path / "scored"
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(predictions),
                "--data",
                "sample",
                "--out",
                str(out),
                "--judge-api-key",
                "jk-data-0f1e2d",
            ]
        )
        == 0
    )
    notes = [line for line in capsys.readouterr().err.splitlines() if "a secret value" in line]
    assert len(notes) == 1 and "the answers of submission.zip" in notes[0]
    with zipfile.ZipFile(out / "submission.zip") as zf:  # data: kept as it was
        assert b"A jk-data-0f1e2d" in zf.read("ruHHH_Image.json")
    page = (out / "results.html").read_text(encoding="utf-8")
    assert "jk-data-0f1e2d" not in page and "A ***" in page  # a report: masked


# ---- the secret scan: every command, every secret, every byte written and printed ----

# One unique value per place a secret can come from (each at least 6 characters).
PLANTED = {
    "--api-key": "sk-apikey-4a1f9e",
    "--judge-api-key": "jk-judgekey-51d3a",
    "judge agreement --api-key": "ag-agreekey-7c21b",
    "build --token": "hf-buildtok-82ad0",
    "metrics --token": "hf-metrictok-93be1",
    "judge serve --api-key": "sv-servekey-a4cf2",
    "$OPENAI_API_KEY": "env-openai-77c2e1",
    "$HF_TOKEN": "env-hftoken-5a6b7c",
    "$HUGGING_FACE_HUB_TOKEN": "env-hubtoken-8d9e0f",
    "$MERA_JUDGE_API_KEY": "env-judge-9b0c4d",
    "$MERA_SERVE_API_KEY": "env-serve-3e8f20",
    "user:password@": "bpass-word-5e6f7a",
    "?token=": "qtok-judge-1c2d3e",
    "?k%65y=": "pkey-escaped-3e4f5a",
    "?session=": "sess-judge-5a6b7c",
    "#access_token=": "frag-judge-7c8d9e",
    "dead user:password@": "dpass-word-0a1b2c",
    "?pwd=": "dpwd-dead-3c4d5e",
    "?jwt=": "djwt-dead-6e7f8a",
    "?code=": "dcode-dead-9a0b1c",
    "dead #fragment": "dfrag-dead-2c3d4e",
    "model_args token=": "ma-token-9e0f1a",
    "model_args api_key=": "ma-apikey-4b5c6d",
}
S = PLANTED


@pytest.fixture(scope="module")
def keyed_servers(tmp_path_factory):
    """The package's chat server over the tiny model (no key: a URL password passes) and
    its judge server over the tiny judge, whose key is the planted --judge-api-key."""
    import threading

    from tiny_judge import build_tiny_judge

    from mera_multi_hf.generation.backends.hf import HFBackend
    from mera_multi_hf.serving import judge_server
    from mera_multi_hf.serving.chat_server import make_server

    backend = HFBackend(None, batch_size=4)
    backend.load()
    chat = make_server(backend, port=0, model_name="tiny-served")
    threading.Thread(target=chat.serve_forever, args=(0.05,), daemon=True).start()
    judge_dir = build_tiny_judge(tmp_path_factory.mktemp("tiny-judge"))
    judge = judge_server.serve(
        str(judge_dir), "127.0.0.1", 0, device="cpu", batch_size=8, api_key=S["--judge-api-key"]
    )
    yield {
        "chat": f"http://127.0.0.1:{chat.server_port}/v1",
        "judge": judge.url,
        "judge_dir": str(judge_dir),
    }
    chat.shutdown()
    chat.server_close()
    judge.shutdown()


def _commands(tmp: Path, servers: dict) -> list[tuple[list[str], int]]:
    """Every command with the secrets planted, and the exit status each must give."""
    judge_url = (
        f"{servers['judge']}/classify?token={S['?token=']}&k%65y={S['?k%65y=']}"
        f"&session={S['?session=']}#access_token={S['#access_token=']}"
    )
    base_url = servers["chat"].replace("://", f"://chatuser:{S['user:password@']}@")
    dead_url = (
        f"http://deaduser:{S['dead user:password@']}@127.0.0.1:9/v1?pwd={S['?pwd=']}"
        f"&jwt={S['?jwt=']}&code={S['?code=']}#{S['dead #fragment']}"
    )
    run, scored = str(tmp / "run"), str(tmp / "scored")
    judged = ["--judge-url", judge_url, "--judge-api-key", S["--judge-api-key"]]
    labelled = tmp / "labelled.jsonl"
    labelled.write_text(
        "".join(
            json.dumps(
                {"prompt": "Вопрос?", "gold": "синий", "label": i % 2, "prediction": "синий"}
            )
            + "\n"
            for i in range(4)
        )
    )
    agreement = ["judge", "agreement", "--data", str(labelled), "--sep", "[SEP]"]
    predictions = tmp / "predictions.jsonl"
    predictions.write_text(
        "".join(json.dumps({"id": i, "prediction": "A"}) + "\n" for i in range(1, 27))
    )
    return [
        (
            [
                "evaluate",
                "--backend",
                "openai",
                "--model",
                "tiny-served",
                "--base-url",
                base_url,
                "--api-key",
                S["--api-key"],
                *judged,
                "--data",
                "sample",
                "--limit",
                "2",
                "--no-progress",
                "--output-dir",
                run,
            ],
            0,
        ),
        (
            [
                "score",
                "--task",
                "ruhhh_image",
                "--data",
                "sample",
                "--predictions",
                str(predictions),
                "--out",
                scored,
                *judged,
            ],
            0,
        ),
        (["compare", run, scored, "--out", str(tmp / "compare")], 0),
        (["leaderboard", run, scored, "--out", str(tmp / "leaderboard")], 0),
        (["view", run], 0),
        (
            [
                *agreement,
                "--url",
                judge_url,
                "--api-key",
                S["--judge-api-key"],
                "--out",
                str(tmp / "agreement.json"),
            ],
            0,
        ),
        (
            [
                *agreement,
                "--url",
                servers["chat"].replace("/v1", f"/classify?jwt={S['?jwt=']}"),
                "--api-key",
                S["judge agreement --api-key"],
            ],
            2,
        ),  # not a judge: refused at once
        (
            [
                "evaluate",
                "--backend",
                "openai",
                "--model",
                "tiny-served",
                "--base-url",
                dead_url,
                "--api-key",
                S["--api-key"],
                "--data",
                "sample",
                "--limit",
                "2",
                "--no-progress",
                "--output-dir",
                str(tmp / "dead"),
            ],
            2,
        ),
        (
            [
                "evaluate",
                "--model",
                f"pretrained=tiny,token={S['model_args token=']},"
                f"api_key={S['model_args api_key=']}",
                "--data",
                "sample",
                "--limit",
                "2",
                "--no-progress",
                "--output-dir",
                str(tmp / "no-model"),
            ],
            2,
        ),
        (
            [
                "score",
                "--task",
                "ruhhh_image",
                "--data",
                "sample",
                "--predictions",
                str(predictions),
                "--out",
                str(tmp / "dead-judge"),
                "--judge-url",
                f"http://127.0.0.1:9/classify?pwd={S['?pwd=']}&code={S['?code=']}"
                f"#{S['dead #fragment']}",
                "--judge-api-key",
                S["--judge-api-key"],
            ],
            2,
        ),
        (
            [
                "build",
                "ruhhh_image",
                "--raw",
                "sample",
                "--out",
                str(tmp / "export"),
                "--push",
                "someone/data",
                "--token",
                S["build --token"],
            ],
            2,
        ),
        (["metrics", "export", "--out", str(tmp / "metrics")], 0),
        (["metrics", "push", "--token", S["metrics --token"]], 2),
        (
            [
                "judge",
                "serve",
                "--model",
                servers["judge_dir"],
                "--port",
                servers["judge"].rsplit(":", 1)[1],
                "--api-key",
                S["judge serve --api-key"],
            ],
            2,
        ),
    ]


def _written(root: Path):
    """(name, bytes) of every file under ``root``, the members of every ZIP too."""
    import io

    def unzip(name, data):
        yield name, data
        if data[:4] == b"PK\x03\x04":
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for member in zf.namelist():
                    yield from unzip(f"{name}!{member}", zf.read(member))

    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        yield from unzip(str(path), path.read_bytes())


def _spellings(value: str) -> set[bytes]:
    from urllib.parse import quote

    return {form.encode() for form in (value, quote(value, safe=""), json.dumps(value)[1:-1])}


def test_no_planted_secret_is_written_or_printed_by_any_command(
    tmp_path, keyed_servers, capsys, caplog, monkeypatch
):
    import logging

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name, value in PLANTED.items():
        if name.startswith("$"):
            monkeypatch.setenv(name[1:], value)
    caplog.set_level(logging.INFO)
    printed, statuses = [], []
    for argv, expected in _commands(tmp_path, keyed_servers):
        statuses.append((argv[:2], main(argv), expected))
        out, err = capsys.readouterr()
        printed.append(f"$ {argv[:2]}\n{out}\n{err}")
    wrong = [text for (_, code, expected), text in zip(statuses, printed) if code != expected]
    assert not wrong, wrong
    seen = [("printed", "\n".join(printed).encode()), ("logged", caplog.text.encode())]
    cache = Path(os.environ["MERA_MULTI_CACHE"])
    seen += list(_written(tmp_path)) + (list(_written(cache)) if cache.is_dir() else [])
    leaks = [
        (where, name)
        for name, value in PLANTED.items()
        for form in _spellings(value)
        for where, data in seen
        if form in data
    ]
    assert not leaks, leaks
    run = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))["run"]
    assert "http://***@127.0.0.1" in json.dumps(run["preflight"])  # masked, still there
    assert run["judge"]["backend"] == "http" and (tmp_path / "agreement.json").is_file()
    assert len([name for name, _ in seen if "!" in name]) >= 3  # the ZIPs were opened
