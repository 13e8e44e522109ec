"""Preflight: before the first generation, ask every component the run will need
whether it is there: the output folder, each task's data source, the model (or the
server behind --base-url) and the judge. A missing piece stops the run in one line,
in seconds, instead of after hours of generation; what was checked goes to
results.json (``run.preflight``).

Each network check is one attempt with a short timeout: a server that does not answer
a preflight will not answer the run either.
"""
from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from . import json_read
from .errors import MeraError

PROBE_TIMEOUT = 10.0


def _timed(checks: list, component: str, check) -> None:
    started = time.perf_counter()
    try:
        detail = check()
    except MeraError as err:
        named = component.split()[-1] in str(err)  # "data ruhhh_image": the task is named
        raise MeraError(f"preflight: {'' if named else component + ': '}{err}") from None
    checks.append({"component": component, "ok": True, "detail": detail,
                   "seconds": round(time.perf_counter() - started, 3)})


def preflight_run(config, specs, sources, engine=None) -> dict:
    """Check what ``run_evaluation`` will need (MeraError on the first missing piece)."""
    started, checks = time.perf_counter(), []
    _timed(checks, "output folder", lambda: check_output(config.output_dir))
    if engine is None:  # a ready engine was checked by whoever made it
        _timed(checks, "model", lambda: check_model(config))
    for task in specs:
        _timed(checks, f"data {task.key}", lambda task=task: check_source(task, sources[task.key]))
    if config.judge or config.judge_url:
        _timed(checks, "judge", lambda: check_judge(config.judge, config.judge_url,
                                                    config.judge_tokenizer, config.judge_api_key))
    return {"ok": True, "seconds": round(time.perf_counter() - started, 3), "checks": checks}


def preflight_score(task, data, out, judge, judge_url, judge_tokenizer, judge_api_key) -> dict:
    """The same for ``mera-multi score``: output folder, data source, judge."""
    started, checks = time.perf_counter(), []
    _timed(checks, "output folder", lambda: check_output(out, flag="--out"))
    _timed(checks, f"data {task.key}", lambda: check_source(task, data))
    if judge or judge_url:
        _timed(checks, "judge", lambda: check_judge(judge, judge_url, judge_tokenizer,
                                                    judge_api_key))
    return {"ok": True, "seconds": round(time.perf_counter() - started, 3), "checks": checks}


def check_output(folder, flag: str = "--output-dir") -> str:
    """The folder is one, or can be made: its nearest existing parent is writable."""
    if folder is None:
        return "default folder under runs/"
    path = Path(folder).expanduser()
    if path.exists() and not path.is_dir():
        raise MeraError(f"{flag} {path} is a file, not a folder")
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        read_only = os.statvfs(existing).f_flag & os.ST_RDONLY
        reason = os.strerror(errno.EROFS if read_only else errno.EACCES)
        raise MeraError(f"{flag}: cannot write {path}: {existing}: {reason}")
    return str(path)


def check_source(task, source) -> str:
    """The source resolves (sample, a folder holding a dataset, or a Hub id that is
    reachable or cached)."""
    from .loading import check_hub_source, resolve_source, source_kind

    resolved = resolve_source(task, source)
    kind = source_kind(resolved)
    if kind == "hub":
        check_hub_source(task, str(resolved))
    return f"{kind}: {resolved}"


def check_model(config) -> str:
    if config.backend == "openai":
        return check_server(config.base_url, config.api_key, config.model, config.timeout)
    if config.model is None:
        return "the built-in tiny model"
    return check_hub_model(config.model, "model", "--model", "a folder saved with "
                           "save_pretrained")


def check_hub_model(name: str, what: str, flag: str, alternative: str) -> str:
    """A local folder, or a Hub id that is reachable or in the local cache."""
    from .offline import in_hub_cache, offline_reason

    path = Path(name).expanduser()
    if path.is_dir():
        return f"local folder {path}"
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise MeraError(f"{flag} {name} is not a {what} folder: there is no such folder")
    reason = offline_reason()
    if reason is None:
        return f"Hub id {name} (online)"
    if in_hub_cache(name, "model"):
        return f"Hub id {name} (offline: from the local cache)"
    raise MeraError(f"cannot load {what} {name!r}: it is on the Hub, which is out of reach "
                    f"({reason}), and not in the local cache: pass {alternative}, or run where "
                    f"the Hub answers")


def probe(url: str, api_key: str | None, timeout: float = PROBE_TIMEOUT):
    """One GET (no retries): (status, JSON or None); MeraError when nothing answers."""
    import requests

    from .http_client import short_error

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = requests.get(url, headers=headers, timeout=timeout)
    except requests.Timeout:
        raise MeraError(f"{url} did not answer within {timeout:g} s") from None
    except requests.RequestException as err:
        raise MeraError(f"{url} is unreachable ({short_error(err)}); is the server "
                        f"running?") from None
    try:
        body = json_read.loads(resp.content, url)
    except json_read.JsonReadError:
        body = None
    return resp.status_code, body


def _refused(url: str, status: int, key_flag: str) -> str:
    if status in (401, 403):
        return (f"{url} refused the request with HTTP {status} (authentication): pass the "
                f"right key with {key_flag}")
    return f"{url} answered HTTP {status}"


def check_server(base_url: str | None, api_key: str | None, model: str | None,
                 timeout: float) -> str:
    """An OpenAI-compatible server answers GET /v1/models, accepts the key and serves
    the model."""
    if not base_url or not model:
        raise MeraError("--backend openai needs --base-url and --model")
    from .runner.backends.openai import split_urls

    return "; ".join(_check_one_server(url, api_key, model, timeout)
                     for url in split_urls(base_url))  # every server named must answer


def _check_one_server(base_url: str, api_key: str | None, model: str, timeout: float) -> str:
    from .runner.backends.openai import join_url

    url = join_url(base_url, "/models")
    status, body = probe(url, api_key, min(timeout, PROBE_TIMEOUT))
    if status != 200:
        raise MeraError(_refused(url, status, "--api-key (or $OPENAI_API_KEY)"))
    served = [str(m.get("id")) for m in (body or {}).get("data", []) if isinstance(m, dict)] \
        if isinstance(body, dict) else []
    if served and model not in served:
        raise MeraError(f"{url} serves {', '.join(served[:10])}, not {model!r}: pass one of "
                        f"those with --model")
    return f"{url} serves {model}"


def check_judge(judge, judge_url, judge_tokenizer, judge_api_key) -> str:
    """A served judge answers, accepts the key and names its separator (the judge object
    made here is the one scoring reuses); a local judge's files are at hand."""
    from .judge import Judge, get_judge

    if isinstance(judge, Judge):
        return "a judge object given by the caller"
    if judge and judge_url:
        raise MeraError("give either --judge or --judge-url, not both")
    if judge_url:
        from .judge import classify_url

        base = classify_url(judge_url).split("/", 3)
        models = "/".join(base[:3]) + "/v1/models"
        status, _ = probe(models, judge_api_key)
        if status != 200:
            raise MeraError(_refused(models, status, "--judge-api-key"))
        options = {"api_key": judge_api_key} if judge_api_key else {}
        served = get_judge(None, judge_url, judge_tokenizer=judge_tokenizer, **options)
        return f"{served.url}: model {served.resolved_model()}, separator {served.sep!r}"
    found = check_hub_model(str(judge), "judge model", "--judge",
                            "a local judge folder (saved with save_pretrained)")
    from .judge import _load_tokenizer

    sep = _load_tokenizer(str(judge)).sep_token  # the judge input needs one
    if sep is None:
        raise MeraError(f"the judge tokenizer of {judge} has no sep_token: not a judge model")
    return f"{found}, separator {sep!r}"
