"""Preflight: before the first generation, ask every component the run will need
whether it is there: the output folder, each task's data source, the model (or the
server behind --base-url) and the judge. A missing piece stops the run in one line,
in seconds, instead of after hours of generation; what was checked goes to
results.json (``run.preflight``).

Each check lives with the stage that owns what it checks and takes only the values it
checks (the model and the device: :mod:`mera_multi_hf.generation.checks`; a source:
:func:`mera_multi_hf.data.data_owner.check_source`; the judge:
:mod:`mera_multi_hf.judge.checks`); this module runs them in order and times each. Each
network check is one attempt with a short timeout: a server that does not answer a
preflight will not answer the run either.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from pathlib import Path

from mera_multi_hf.core.errors import MeraError


@contextlib.contextmanager
def _timed(checks: list, component: str):
    """Times one check: the block sets the entry's ``detail``; the entry joins ``checks``
    when it passes, and a MeraError names the component."""
    started = time.perf_counter()
    entry = {"component": component, "ok": True, "detail": None}
    try:
        yield entry
    except MeraError as err:
        named = component.split()[-1] in str(err)  # "data ruhhh_image": the task is named
        raise MeraError(f"preflight: {'' if named else component + ': '}{err}") from None
    entry["seconds"] = round(time.perf_counter() - started, 3)
    checks.append(entry)


def preflight_run(config, specs, sources, engine=None) -> dict:
    """Check what ``run_evaluation`` will need (MeraError on the first missing piece),
    each check handed only its own values; the stages below are asked in their order."""
    from mera_multi_hf.data.data_owner import check_source
    from mera_multi_hf.generation.checks import check_device, check_media, check_model
    from mera_multi_hf.judge.checks import check_judge

    started, checks = time.perf_counter(), []
    with _timed(checks, "output folder") as check:
        check["detail"] = check_output(config.output_dir)
    with _timed(checks, "extras") as check:
        check["detail"] = check_extras(specs)
    backend, model = config.backend, config.model
    check_media(backend, specs, engine)
    if engine is None:  # a ready engine was checked by whoever made it
        if backend == "hf":
            with _timed(checks, "device") as check:
                check["detail"] = check_device(config.device)
        with _timed(checks, "model") as check:
            key, timeout = config.openai_key(), config.timeout
            check["detail"] = check_model(backend, model, config.base_url, key, timeout)
    for task in specs:
        with _timed(checks, f"data {task.key}") as check:
            check["detail"] = check_source(task, sources[task.key])
    if config.judge or config.judge_url:
        with _timed(checks, "judge") as check:
            check["detail"] = check_judge(
                config.judge, config.judge_url, config.judge_tokenizer, config.judge_api_key
            )
    return {"ok": True, "seconds": round(time.perf_counter() - started, 3), "checks": checks}


def preflight_score(task, data, out, judge, judge_url, judge_tokenizer, judge_api_key) -> dict:
    """The same for ``mera-multi score``: output folder, data source, judge."""
    from mera_multi_hf.data.data_owner import check_source
    from mera_multi_hf.judge.checks import check_judge

    started, checks = time.perf_counter(), []
    with _timed(checks, "output folder") as check:
        check["detail"] = check_output(out, flag="--out")
    with _timed(checks, f"data {task.key}") as check:
        check["detail"] = check_source(task, data)
    if judge or judge_url:
        with _timed(checks, "judge") as check:
            check["detail"] = check_judge(judge, judge_url, judge_tokenizer, judge_api_key)
    return {"ok": True, "seconds": round(time.perf_counter() - started, 3), "checks": checks}


def check_extras(specs) -> str:
    """The modules each task's modality decodes its media with import (its declaration
    says the modality), else the pip line that installs them."""
    from mera_multi_hf.tasks.table import MODALITY_EXTRAS

    found = []
    for modality in dict.fromkeys(task.modality for task in specs):
        extra, modules = MODALITY_EXTRAS[modality]
        for module in modules:
            try:
                importable(module)
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


def importable(module: str) -> None:
    """Raise unless ``module`` can be imported: its package is imported (a missing or
    broken install fails here) and a submodule only found, not run (scipy.signal alone
    imports 700 modules in seconds, which a run that decodes no audio never needs)."""
    import importlib
    import importlib.util

    importlib.import_module(module.split(".")[0])
    if "." in module and importlib.util.find_spec(module) is None:
        raise ImportError(f"No module named {module!r}")


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
