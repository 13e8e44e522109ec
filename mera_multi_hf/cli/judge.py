"""`mera-multi judge ...`: serve a judge, measure its agreement with human labels, train one.

The code lives in judge_server.py, judge_agreement.py and judge_train.py (imported when a
command runs, so that `--help` stays light); the scripts in the checkout's judge_model/
run these same commands.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from mera_multi_hf.core.arguments import Options, add_command, opt
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.limits import DEFAULT_LIMITS
from mera_multi_hf.judge.judges import API_KEY_ENV
from mera_multi_hf.judge.train import JUDGE_DATA_HELP, TrainOptions
from mera_multi_hf.serving.options import ServerOptions


@dataclass
class JudgeServeOptions(ServerOptions):
    """The options of `judge serve` (judge_model/server.py runs this same command); those
    of any server come from ServerOptions."""

    model: str | None = opt(
        None, "local folder or Hub id of the judge classifier", required=True, path=True
    )
    served_model_name: str | None = opt(None, "the name clients send as `model` (default: --model)")
    device: str | None = opt(None, "cpu, cuda, cuda:1, ... (default: cuda when available)")
    batch_size: int = opt(16, "texts per forward pass", low=1)
    api_key: str | None = opt(
        None,
        f"require `Authorization: Bearer <key>` on every route but "
        f"/health (default: ${API_KEY_ENV}, which `ps` does not show; none: "
        f"no authentication)",
        secret=True,
    )
    max_judge_items: int | None = opt(
        None, f"inputs per /classify request (default: {DEFAULT_LIMITS.max_judge_items})", low=1
    )
    max_judge_chars: int | None = opt(
        None, f"characters per input (default: {DEFAULT_LIMITS.max_judge_chars})", low=1
    )
    max_judge_request_chars: int | None = opt(
        None,
        f"characters of a request's inputs "
        f"together (default: "
        f"{DEFAULT_LIMITS.max_judge_request_chars})",
        low=1,
    )


def cmd_serve(options: JudgeServeOptions) -> int:
    from mera_multi_hf.serving import judge_server as server_mod

    try:
        server = server_mod.from_options(options)
    except OSError as err:
        raise MeraError(
            f"cannot listen on {options.host}:{options.port}: {err}. Pick another "
            "--port or stop what is using it"
        ) from None
    except ValueError as err:
        raise MeraError(f"judge serve: {err}") from None
    return server_mod.run_foreground(server)


@dataclass
class AgreementOptions(Options):
    """The options of `judge agreement`: a judge run here (--model) or served (--url)."""

    data: str | None = opt(None, JUDGE_DATA_HELP, required=True, path=True)
    model: str | None = opt(None, "judge run here: local folder or Hub id", path=True)
    url: str | None = opt(None, "or a served judge, e.g. http://127.0.0.1:8000/classify", url=True)
    served_model_name: str | None = opt(
        None, "with --url: the model name (default: ask /v1/models)"
    )
    tokenizer: str | None = opt(
        None,
        "with --url: the judge tokenizer, path or Hub id, for SEP "
        "and token windows (default: ask the server)",
        path=True,
    )
    sep: str | None = opt(None, "with --url and no --tokenizer: the separator token, e.g. [SEP]")
    api_key: str | None = opt(
        None, "with --url: the served judge's API key (default: $MERA_JUDGE_API_KEY)", secret=True
    )
    window: int | None = opt(None, "token window (default: 7995)", low=1)
    device: str | None = opt(None, "with --model: cpu, cuda, ...")
    batch_size: int = opt(16, "with --model: texts per forward pass", low=1)
    out: str | None = opt(
        None,
        "also write the report as JSON into this new file",
        path=True,
        hidden=("--output_path",),
    )
    overwrite: bool = opt(
        False,
        "replace the --out file when it is an agreement report "
        "that this command wrote (never another file, never through a link)",
    )


def cmd_agreement(options: AgreementOptions) -> int:
    from mera_multi_hf.core.outputs import check_report_file, report_kind, write_report_file
    from mera_multi_hf.judge import agreement
    from mera_multi_hf.judge.http_judge import HttpJudge
    from mera_multi_hf.judge.judges import WINDOW_TOKENS
    from mera_multi_hf.judge.local_judge import LocalJudge

    if bool(options.model) == bool(options.url):
        raise MeraError(
            "give exactly one of --model PATH (a judge run here) and --url URL (a served judge)"
        )
    if options.out:  # before the work: nothing done is lost to a refused file
        check_report_file(
            options.out,
            kind="agreement",
            overwrite=options.overwrite,
            inputs=[options.data, options.model],
        )
    records = agreement.read_labelled(options.data)
    window = options.window or WINDOW_TOKENS
    if options.model:
        judge = LocalJudge(
            options.model, device=options.device, batch_size=options.batch_size, window=window
        )
    else:
        judge = HttpJudge(
            options.url,
            model=options.served_model_name,
            tokenizer=options.tokenizer,
            sep=options.sep,
            window=window,
            api_key=options.api_key,
            flags={"tokenizer": "--tokenizer", "api_key": "--api-key"},
        )
    report = agreement.judge_agreement(records, judge)
    print(agreement.format_report(report))
    if options.out:
        doc = {"kind": report_kind("agreement"), **report}
        out = write_report_file(
            options.out,
            json.dumps(doc, ensure_ascii=False, indent=2),
            kind="agreement",
            overwrite=options.overwrite,
            inputs=[options.data, options.model],
        )
        print(f"wrote {out}")
    return 0


def cmd_train(options: TrainOptions) -> int:
    from mera_multi_hf.judge import train

    out = train.train_with(options)
    print(f"saved the judge to {out}")
    return 0


def add_parser(subparsers) -> None:
    judge = subparsers.add_parser(
        "judge",
        help="serve a judge model, measure its agreement with humans, train one",
        description="The answer judge (judge_model/README.md): `judge serve` serves it and "
        "writes no file; `judge agreement` prints its agreement with human labels "
        "(with --out, also as a JSON file); `judge train` writes a trained judge "
        "into --output-dir.",
    )
    sub = judge.add_subparsers(dest="judge_command", metavar="JUDGE_COMMAND")
    judge.set_defaults(func=lambda args: judge.print_help() or 2)
    add_command(
        sub,
        "serve",
        JudgeServeOptions,
        cmd_serve,
        help="serve a classifier with a vLLM-style /classify route",
        description="Serve a judge classifier over HTTP with vLLM's routes: /classify, "
        "/tokenizer_info, /tokenize, /detokenize, /v1/models and /health "
        "(FastAPI under uvicorn). Writes no file.",
    )
    add_command(
        sub,
        "agreement",
        AgreementOptions,
        cmd_agreement,
        help="accuracy, Cohen's kappa and confusion matrix of a judge against human labels",
        description="Accuracy, Cohen's kappa and the confusion matrix of a judge (run "
        "here or served) against human labels, printed; with --out, it also "
        "writes them to that file as JSON.",
    )
    add_command(
        sub,
        "train",
        TrainOptions,
        cmd_train,
        help="train or fine-tune a judge on human-labelled answers",
        description="Train or fine-tune a judge on human-labelled answers. Writes into "
        "--output-dir the judge as save_pretrained writes it (config.json, the "
        "weights, the tokenizer files).",
    )
