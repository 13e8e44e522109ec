"""`mera-multi judge ...`: serve a judge, measure its agreement with human labels, train one.

The code lives in judge_server.py, judge_agreement.py and judge_train.py (imported when a
command runs, so that `--help` stays light); the scripts in the checkout's judge_model/
run these same commands.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .errors import MeraError
from .judge import API_KEY_ENV
from .limits import DEFAULT_LIMITS, add_server_options


def cmd_serve(args) -> int:
    from . import judge_server as server_mod

    try:
        server = server_mod.from_arguments(args)
    except OSError as err:
        raise MeraError(f"cannot listen on {args.host}:{args.port}: {err}. Pick another --port "
                        "or stop what is using it") from None
    except ValueError as err:
        raise MeraError(f"judge serve: {err}") from None
    return server_mod.run_foreground(server)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `judge serve` (judge_model/server.py runs this same command)."""
    parser.add_argument("--model", required=True, help="local folder or Hub id of the judge classifier")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any free one)")
    parser.add_argument("--served-model-name", help="the name clients send as `model` (default: --model)")
    parser.add_argument("--device", help="cpu, cuda, cuda:1, ... (default: cuda when available)")
    parser.add_argument("--batch-size", type=int, default=16, help="texts per forward pass")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument("--api-key",
                        help=f"require `Authorization: Bearer <key>` on every route but /health "
                             f"(default: ${API_KEY_ENV}, which `ps` does not show; none: no "
                             f"authentication)")
    add_server_options(parser)
    parser.add_argument("--max-judge-items", type=int,
                        help=f"inputs per /classify request (default {DEFAULT_LIMITS.max_judge_items})")
    parser.add_argument("--max-judge-chars", type=int,
                        help=f"characters per input (default {DEFAULT_LIMITS.max_judge_chars})")


def cmd_agreement(args) -> int:
    from . import judge_agreement as agreement
    from .judge import HttpJudge, LocalJudge, WINDOW_TOKENS

    if bool(args.model) == bool(args.url):
        raise MeraError("give exactly one of --model PATH (a judge run here) and --url URL "
                        "(a served judge)")
    records = agreement.read_labelled(args.data)
    window = args.window or WINDOW_TOKENS
    if args.model:
        judge = LocalJudge(args.model, device=args.device, batch_size=args.batch_size, window=window)
    else:
        judge = HttpJudge(args.url, model=args.served_model_name, tokenizer=args.tokenizer,
                          sep=args.sep, window=window, api_key=args.api_key)
    report = agreement.judge_agreement(records, judge)
    print(agreement.format_report(report))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
        print(f"wrote {out}")
    return 0


def cmd_train(args) -> int:
    from . import judge_train as train

    out = train.train(args.data, args.base, args.out, epochs=args.epochs, learning_rate=args.lr,
                      batch_size=args.batch_size, max_length=args.max_length, seed=args.seed,
                      device=args.device, overwrite=args.overwrite)
    print(f"saved the judge to {out}")
    return 0


def add_parser(subparsers) -> None:
    judge = subparsers.add_parser("judge", help="serve a judge model, measure its agreement with humans, train one")
    sub = judge.add_subparsers(dest="judge_command", metavar="JUDGE_COMMAND")
    judge.set_defaults(func=lambda args: judge.print_help() or 2)

    p = sub.add_parser("serve", help="serve a classifier with a vLLM-style /classify route")
    add_serve_arguments(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("agreement", help="accuracy, Cohen's kappa and confusion matrix of a judge "
                                         "against human labels")
    p.add_argument("--data", required=True,
                   help="JSONL with prompt, gold, prediction, label (0/1) per line")
    p.add_argument("--model", help="judge run here: local folder or Hub id")
    p.add_argument("--url", help="or a served judge, e.g. http://127.0.0.1:8000/classify")
    p.add_argument("--served-model-name", help="with --url: the model name (default: ask /v1/models)")
    p.add_argument("--tokenizer", help="with --url: the judge tokenizer, path or Hub id (SEP + "
                                       "token windows; default: ask the server)")
    p.add_argument("--sep", help="with --url and no --tokenizer: the separator token, e.g. [SEP]")
    p.add_argument("--api-key", help="with --url: the served judge's API key")
    p.add_argument("--window", type=int, help="token window (default 7995)")
    p.add_argument("--device", help="with --model: cpu, cuda, ...")
    p.add_argument("--batch-size", type=int, default=16, help="with --model: texts per forward pass")
    p.add_argument("--out", help="also write the report as JSON here")
    p.set_defaults(func=cmd_agreement)

    p = sub.add_parser("train", help="train or fine-tune a judge on human-labelled answers")
    p.add_argument("--data", required=True,
                   help="JSONL with prompt, gold, prediction, label (0/1) per line")
    p.add_argument("--base", required=True, help="the model to start from (folder or Hub id)")
    p.add_argument("--out", required=True, help="folder to save the trained judge into")
    p.add_argument("--epochs", type=float, default=1.0,
                   help="passes over the data; a fraction stops part way (default 1.0)")
    p.add_argument("--lr", type=float, default=2e-5, help="learning rate")
    p.add_argument("--batch-size", type=int, default=8, help="examples per training step (default 8)")
    p.add_argument("--max-length", type=int, default=8192, help="tokens per input (left-truncated)")
    p.add_argument("--seed", type=int, default=0,
                   help="random seed of the initialisation and the shuffling (default 0)")
    p.add_argument("--device", help="cpu to force the CPU (default: what the Trainer picks)")
    p.add_argument("--overwrite", action="store_true",
                   help="write into a folder holding other files (same names are replaced)")
    p.set_defaults(func=cmd_train)
