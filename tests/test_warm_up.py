"""The warm-up that runs while an API run only waits for answers: every module it names
exists (a renamed one would silently move its import back after the last answer), and
once it ran, scoring and writing a run import nothing more of ours, numpy's or Pillow's."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from chat_script import CHAT_SERVER

from mera_multi_hf.pipeline.evaluate import AFTER_THE_ANSWERS

RUN = (
    CHAT_SERVER
    + r"""
def on_request():
    pass

from mera_multi_hf.pipeline import evaluate

evaluate.warm_up_outputs()  # as the run does it while it waits, here before it starts
real = evaluate.score_and_write

def watched(*args, **kwargs):
    before = set(sys.modules)
    try:
        return real(*args, **kwargs)
    finally:
        new = set(sys.modules) - before
        print("frozen after:", gc.get_freeze_count())  # the heap frozen only while it ran
        print(sorted(m for m in new if m.split(".")[0] in ("mera_multi_hf", "numpy", "PIL")))

evaluate.score_and_write = watched
evaluate.run_evaluation(
    model="m", backend="openai", base_url=f"http://127.0.0.1:{server.server_port}/v1",
    tasks="ruhhh_image", data="sample", limit=6, output_dir=sys.argv[1], no_progress=True,
)
"""
)


def test_every_module_the_warm_up_names_exists():
    missing = [name for name in AFTER_THE_ANSWERS if importlib.util.find_spec(name) is None]
    assert not missing


def test_after_the_warm_up_scoring_and_writing_import_nothing_more(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(tmp_path / "run")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-2:] == ["frozen after: 0", "[]"]
    assert (tmp_path / "run" / "results.json").is_file()
