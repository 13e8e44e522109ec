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

from mera_multi_hf.core import json_read
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.foreign_text import foreign
from mera_multi_hf.core.masking import mask_secrets

PROBE_TIMEOUT = 10.0


def _timed(checks: list, component: str, check) -> None:
    started = time.perf_counter()
    try:
        detail = check()
    except MeraError as err:
        named = component.split()[-1] in str(err)  # "data ruhhh_image": the task is named
        raise MeraError(f"preflight: {'' if named else component + ': '}{err}") from None
    checks.append(
        {
            "component": component,
            "ok": True,
            "detail": detail,
            "seconds": round(time.perf_counter() - started, 3),
        }
    )


def preflight_run(config, specs, sources, engine=None) -> dict:
    """Check what ``run_evaluation`` will need (MeraError on the first missing piece)."""
    started, checks = time.perf_counter(), []
    _timed(checks, "output folder", lambda: check_output(config.output_dir))
    _timed(checks, "extras", lambda: check_extras(specs))
    check_media(config.backend, specs, engine)
    if engine is None:  # a ready engine was checked by whoever made it
        if config.backend == "hf":
            _timed(checks, "device", lambda: check_device(config.device))
        _timed(checks, "model", lambda: check_model(config))
    for task in specs:
        _timed(checks, f"data {task.key}", lambda task=task: check_source(task, sources[task.key]))
    if config.judge or config.judge_url:
        _timed(
            checks,
            "judge",
            lambda: check_judge(
                config.judge, config.judge_url, config.judge_tokenizer, config.judge_api_key
            ),
        )
    return {"ok": True, "seconds": round(time.perf_counter() - started, 3), "checks": checks}


def preflight_score(task, data, out, judge, judge_url, judge_tokenizer, judge_api_key) -> dict:
    """The same for ``mera-multi score``: output folder, data source, judge."""
    started, checks = time.perf_counter(), []
    _timed(checks, "output folder", lambda: check_output(out, flag="--out"))
    _timed(checks, f"data {task.key}", lambda: check_source(task, data))
    if judge or judge_url:
        _timed(
            checks, "judge", lambda: check_judge(judge, judge_url, judge_tokenizer, judge_api_key)
        )
    return {"ok": True, "seconds": round(time.perf_counter() - started, 3), "checks": checks}


def check_extras(specs) -> str:
    """The modules each task's modality decodes its media with import (its declaration
    says the modality), else the pip line that installs them."""
    import importlib

    from mera_multi_hf.tasks.table import MODALITY_EXTRAS

    found = []
    for modality in dict.fromkeys(task.modality for task in specs):
        extra, modules = MODALITY_EXTRAS[modality]
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception as err:  # noqa: BLE001 - ImportError, or a broken native library
                tasks = ", ".join(t.key for t in specs if t.modality == modality)
                raise MeraError(
                    f"{tasks}: {modality} tasks need {module.split('.')[0]}, which "
                    f"does not import here ({type(err).__name__}: {err}); install "
                    f'it with: pip install "mera-multi-hf[{extra}]" (in a '
                    f'checkout: pip install -e ".[{extra}]")'
                ) from None
        found += modules
    return ", ".join(found) or "none needed"


def check_device(device: str | None) -> str:
    """--device names a device torch has here: cpu, auto, cuda[:N] with a CUDA build and
    that many GPUs, or another type torch knows (mps, xpu) that is available."""
    if device in (None, "auto", "cpu"):
        return device or "default"
    import torch

    try:
        kind = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise MeraError(
            f"--device {device!r} is not a device torch knows: give cpu, cuda, cuda:N or auto"
        ) from None
    backend = getattr(torch, kind.type, None)
    if kind.type == "cuda" and torch.version.cuda is None:
        raise MeraError(
            f"--device {device}: this torch ({torch.__version__}) is a CPU build, "
            f"without CUDA: install the CUDA build of torch, or run on --device cpu"
        )
    count = backend.device_count() if hasattr(backend, "device_count") else 0
    if count == 0 or (kind.index or 0) >= count:
        raise MeraError(
            f"--device {device}: {count} {kind.type} device(s) visible here; give "
            f"one that exists, or --device cpu"
        )
    return f"{device} ({count} visible)"


def check_model_kind(path: Path) -> str | None:
    """Why the model folder's config names no generative model (a text classifier, a
    masked LM, ...) by transformers' own task mappings, or None."""
    from mera_multi_hf.core import json_read

    try:
        architectures = json_read.read_file(path / "config.json").get("architectures")
    except (OSError, ValueError, AttributeError):
        return None  # loading it will say what is wrong
    from transformers.models.auto import modeling_auto as auto

    kinds = {
        "a text classifier": "SEQUENCE_CLASSIFICATION",
        "a token classifier": "TOKEN_CLASSIFICATION",
        "a question-answering model": "QUESTION_ANSWERING",
        "a masked language model": "MASKED_LM",
        "an image classifier": "IMAGE_CLASSIFICATION",
        "an audio classifier": "AUDIO_CLASSIFICATION",
    }
    for kind, mapping in kinds.items():
        names = getattr(auto, f"MODEL_FOR_{mapping}_MAPPING_NAMES", {}).values()
        classes = {n for v in names for n in ((v,) if isinstance(v, str) else v)}
        if architectures and all(a in classes for a in architectures):
            return (
                f"--model {path} is {kind} ({', '.join(architectures)}), not a generative "
                f"model: give an image-text, audio or causal language model"
            )
    return None


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
    reachable or cached) and is the task's own data, not another task's."""
    from mera_multi_hf.data.data_owner import check_data_task
    from mera_multi_hf.data.sources import check_hub_source, resolve_source, source_kind

    resolved = resolve_source(task, source)
    kind = source_kind(resolved)
    note = check_data_task(task, resolved, kind)  # another task's Hub id: no need to reach it
    if kind == "hub":
        check_hub_source(task, str(resolved))
    return f"{kind}: {resolved}" + (f" ({note})" if note else "")


def check_media(kind: str, specs, engine=None) -> None:
    """MeraError for a task whose media the backend does not take (its declared
    capabilities), before any work."""
    from mera_multi_hf.generation.backends import backend_spec, capabilities_of

    takes = capabilities_of(engine).media if engine else backend_spec(kind).capabilities.media
    refused = [t.key for t in specs if t.modality not in takes]
    if refused:
        raise MeraError(
            f"preflight: the {kind} backend takes {', '.join(sorted(takes)) or 'no media'}"
            f", not the {'/'.join(sorted({t.modality for t in specs} - takes))} of "
            f"{', '.join(refused)}: choose other tasks or another backend"
        )


def check_model(config) -> str:
    if config.backend == "openai":
        return check_server(config.base_url, config.openai_key(), config.model, config.timeout)
    if config.backend != "hf":  # an installed backend checks its model as it loads
        return f"the {config.backend} backend's model {config.model or '(its default)'}"
    from mera_multi_hf.generation.backends.model_kinds import model_kind, model_pointer

    kind = model_kind(config.model)
    if kind is not None:
        return kind.title or kind.model_id
    pointer = None if Path(config.model).expanduser().exists() else model_pointer(config.model)
    if pointer:
        raise MeraError(pointer)
    found = check_hub_model(config.model, "model", "--model", "a folder saved with save_pretrained")
    path = Path(config.model).expanduser()
    why = check_model_kind(path) if path.is_dir() else None
    if why:
        raise MeraError(why)
    return found


def check_hub_model(name: str, what: str, flag: str, alternative: str) -> str:
    """A local folder, or a Hub id that is reachable or in the local cache."""
    from mera_multi_hf.core.offline import in_hub_cache, offline_reason

    path = Path(name).expanduser()
    if path.is_dir():
        return f"local folder {path}"
    if path.exists():
        raise MeraError(f"{flag} {name} is not a {what} folder: it is a file (give {alternative})")
    # a path as typed, or one under a folder that is here (runs/model), is a local path
    if (
        name.startswith((".", "/", "~"))
        or name.count("/") > 1
        or "/" in name
        and path.parent.is_dir()
    ):
        raise MeraError(
            f"{flag} {name} is not a {what} folder: it is a local path that does not exist"
        )
    reason = offline_reason()
    if reason is None:
        return f"Hub id {name} (online)"
    if in_hub_cache(name, "model"):
        return f"Hub id {name} (offline: from the local cache)"
    raise MeraError(
        f"cannot load {what} {name!r}: no folder of that name is here, and as a Hub "
        f"id it is out of reach ({reason}) and not in the local cache: pass "
        f"{alternative}, or run where the Hub answers"
    )


def probe(url: str, api_key: str | None, timeout: float = PROBE_TIMEOUT):
    """One GET (no retries) through the one HTTP client, ``timeout`` its whole deadline:
    (status, JSON or None); MeraError when nothing answers."""
    from mera_multi_hf.core.http_client import Client, RequestFailed

    try:
        resp = Client(timeout, api_key=api_key).get(url)
    except RequestFailed as err:
        raise MeraError(
            f"{mask_secrets(url)} {err.problem}; is the server running and the URL right?"
        ) from None
    try:
        body = json_read.loads(resp.content, url)
    except json_read.JsonReadError:
        body = None
    return resp.status, body


def _refused(url: str, status: int, key_flag: str, env: str) -> str:
    if status in (401, 403):  # the flag last: masking eats the word after a key flag
        return (
            f"{url} refused the request with HTTP {status} (authentication): set the "
            f"right key in ${env} or give it with {key_flag}"
        )
    return f"{url} answered HTTP {status}"


def check_server(
    base_url: str | None, api_key: str | None, model: str | None, timeout: float
) -> str:
    """An OpenAI-compatible server answers GET /v1/models, accepts the key and serves
    the model."""
    if not base_url or not model:
        raise MeraError("--backend openai needs --base-url and --model")
    from mera_multi_hf.generation.backends.openai import split_urls

    return "; ".join(
        _check_one_server(url, api_key, model, timeout) for url in split_urls(base_url)
    )  # every server named must answer


def _check_one_server(base_url: str, api_key: str | None, model: str, timeout: float) -> str:
    from mera_multi_hf.generation.backends.openai import join_url

    url = join_url(base_url, "/models")
    status, body = probe(url, api_key, min(timeout, PROBE_TIMEOUT))
    if status != 200:
        raise MeraError(_refused(url, status, "--api-key", "OPENAI_API_KEY"))
    data = body.get("data") if isinstance(body, dict) else None
    served = [m.get("id") for m in data if isinstance(m, dict)] if isinstance(data, list) else []
    if served and model not in served:
        names = ", ".join(foreign(name, 80) for name in served[:10])
        more = f" and {len(served) - 10} more" if len(served) > 10 else ""
        raise MeraError(
            f"{url} serves {names}{more}, not {foreign(model, quoted=True)}: pass one of "
            "those with --model"
        )
    return f"{url} serves {model}"


def check_judge(judge, judge_url, judge_tokenizer, judge_api_key) -> str:
    """A served judge answers, accepts the key and names its separator (the judge object
    made here is the one scoring reuses); a local judge's files are at hand."""
    from mera_multi_hf.core.http_client import key_or_env, one_secret
    from mera_multi_hf.judge.choose import get_judge
    from mera_multi_hf.judge.judges import API_KEY_ENV, Judge

    if isinstance(judge, Judge):
        return "a judge object given by the caller"
    if judge and judge_url:
        raise MeraError("give either --judge or --judge-url, not both")
    if judge_url:
        from mera_multi_hf.judge.http_judge import classify_url

        base = classify_url(judge_url).split("/", 3)
        models = "/".join(base[:3]) + "/v1/models"
        judge_api_key = key_or_env(judge_api_key, API_KEY_ENV)
        one_secret(
            "the judge URL",
            judge_url,
            judge_api_key,  # before any key is sent
            f"${API_KEY_ENV} or --judge-api-key",
        )
        status, _ = probe(models, judge_api_key)
        if status != 200:
            raise MeraError(_refused(models, status, "--judge-api-key", API_KEY_ENV))
        options = {"api_key": judge_api_key} if judge_api_key else {}
        served = get_judge(None, judge_url, judge_tokenizer=judge_tokenizer, **options)
        return (  # the server's own words, shown through the sanitiser
            f"{served.url}: model {foreign(served.resolved_model())}, "
            f"separator {foreign(served.sep, quoted=True)}"
        )
    found = check_hub_model(
        str(judge), "judge model", "--judge", "a local judge folder (saved with save_pretrained)"
    )
    from mera_multi_hf.judge.http_judge import _load_tokenizer

    sep = _load_tokenizer(str(judge)).sep_token  # the judge input needs one
    if sep is None:
        raise MeraError(f"the judge tokenizer of {judge} has no sep_token: not a judge model")
    return f"{found}, separator {sep!r}"
