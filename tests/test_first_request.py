"""What an API run does before its first request, and what it leaves for the time it
waits: the manifest (its package versions and its syncs) is written while the first
requests go out, and the sample log waits for it before its first line; what the
data's card says of its privacy, and the scoring code, are read later."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from chat_script import CHAT_SERVER

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.outputs import OutputFolder
from mera_multi_hf.core.provenance import package_versions
from mera_multi_hf.generation.samplelog import SampleLog

RECORD = {"task": "t", "split": "test", "id": 1, "request_hash": "h", "generation": "A"}


def _log(tmp_path) -> SampleLog:
    folder = OutputFolder(tmp_path / "run", kind="run")
    folder.claim(["logs/samples-rank0.jsonl"])
    return SampleLog(folder)


def test_the_first_line_waits_for_what_must_be_on_disk_first(tmp_path):
    log, order = _log(tmp_path), []
    log.first_waits_for(lambda: order.append("manifest written"))
    log.append([RECORD])
    log.append([dict(RECORD, id=2)])
    log.close()
    assert order == ["manifest written"]  # once, before the first line
    assert len(log.path.read_text(encoding="utf-8").splitlines()) == 2
    log.folder.close()


def test_no_line_is_logged_when_what_comes_first_fails(tmp_path):
    log = _log(tmp_path)

    def failed():
        raise MeraError("cannot write run_manifest.json: no space left")

    log.first_waits_for(failed)
    with pytest.raises(MeraError, match="no space left"):
        log.append([RECORD])
    assert not log.path.exists() or log.path.read_bytes() == b""
    log.folder.close()


# A run through the openai backend against a real local server; the server notes which
# modules the client process holds when the first request arrives. The warm-up (which
# reads them on purpose while the run waits) is left out, so that what the first request
# needed is what is seen.
RUN = (
    CHAT_SERVER
    + r"""
seen = []

def on_request():
    if not seen:
        seen.append(sorted(sys.modules))

from mera_multi_hf.pipeline import evaluate

evaluate.warm_up_in_background = lambda loaded=(): None
evaluate.run_evaluation(
    model="m", backend="openai", base_url=f"http://127.0.0.1:{server.server_port}/v1",
    tasks="ruhhh_image", data="sample", limit=6, output_dir=sys.argv[1], no_progress=True,
)
print(json.dumps(seen[0]))
"""
)

NOT_BEFORE_THE_FIRST_REQUEST = (
    "yaml",  # the card's privacy
    "mera_multi_hf.pipeline.outcome",
    "mera_multi_hf.scoring.records",
    "mera_multi_hf.scoring.run_results",
)


def _api_run(out, cache) -> set[str]:
    """The modules held when the first request arrived."""
    env = dict(os.environ, MERA_MULTI_CACHE=str(cache))
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(out)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_an_api_run_reads_the_card_and_imports_scoring_after_its_first_request(tmp_path):
    _api_run(tmp_path / "first", tmp_path / "cache")  # converts the sample once (`datasets`)
    out = tmp_path / "run"
    before = _api_run(out, tmp_path / "cache")
    assert not before & set(NOT_BEFORE_THE_FIRST_REQUEST)
    # all the same decided and recorded: the sample's test split is private
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert json.dumps(results).count('"private": true') >= 1
    manifest = json.loads((out / "run_manifest.json").read_text(encoding="utf-8"))
    session = manifest["sessions"][-1]
    assert session["versions"] == package_versions()  # filled in as it was written
    assert session["finished_at"] is not None
    assert len((out / "logs" / "samples-rank0.jsonl").read_text().splitlines()) == 6


# The program itself (cli.main.main with the process's own arguments) against a real
# local server: the cyclic collections it starts, before its work starts and by the first
# request, and the BLAS setting numpy finds when it loads (core.start_up).
PROGRAM = (
    CHAT_SERVER
    + r"""
import os
from mera_multi_hf.cli import main as cli
from mera_multi_hf.core import start_up

collections, seen = [], {}
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(1))
resume = start_up.resume_collections

def resumed():
    seen.setdefault("before the run's work", len(collections))
    resume()

start_up.resume_collections = resumed

def on_request():
    seen.setdefault("collector at the first request", gc.isenabled() and gc.get_freeze_count() > 0)
    seen.setdefault("BLAS threads' spin", os.environ.get("OPENBLAS_THREAD_TIMEOUT"))

sys.argv = ["mera-multi", "evaluate", "--backend", "openai", "--model", "m",
            "--base-url", f"http://127.0.0.1:{server.server_port}/v1", "--tasks", "ruhhh_image",
            "--data", "sample", "--limit", "6", "--output-dir", sys.argv[1], "--no-progress"]
seen["numpy loaded before the program"] = "numpy" in sys.modules  # (it reads the setting then)
code = cli.main()
print(json.dumps(dict(seen, code=code, enabled_at_exit=gc.isenabled())))
"""
)


def test_the_program_starts_without_collections_and_resumes_them_for_its_run(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(tmp_path / "run")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "before the run's work": 0,  # its imports and checks: no pass of the collector
        "collector at the first request": True,  # back, start-up's objects frozen
        "BLAS threads' spin": "4",  # set before numpy loaded: its threads sleep at once
        "numpy loaded before the program": False,
        "code": 0,
        "enabled_at_exit": True,
    }
