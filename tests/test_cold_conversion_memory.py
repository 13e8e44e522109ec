"""A raw folder's conversion into the cache leaves nothing of the split with the process:
what the conversion freed is handed back to the system, so that `--tasks all`, which
converts every task before the run, does not pile one task's leftovers on the next (the
allocators kept them: the process grew with every split it converted). The Parquet
export is also read back a row group at a time, never a whole shard's media at once
(measured in benchmarks/full_size.py: the cold peak)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import full_size_data  # noqa: E402

# In a process of its own: folders of one task converted one after the other (as the
# tasks of a run are), the anonymous resident set after each.
CONVERT = """
import json, sys
from mera_multi_hf.data.loading import load_split
from mera_multi_hf.tasks.table import get_task

def anon():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("RssAnon"))

task, after = get_task(sys.argv[1]), []
for folder in sys.argv[2:]:
    rows = len(load_split(task, folder, "test"))
    after.append((rows, anon()))
print(json.dumps(after))
"""


def test_a_converted_split_leaves_nothing_of_its_media_with_the_process(tmp_path):
    scales = (0.02, 0.1, 0.4)  # the first: what a conversion imports and keeps for good
    folders = [
        full_size_data.make_all(tmp_path / f"data-{scale}", scale, ["unisciencevqa"])[
            "unisciencevqa"
        ]
        for scale in scales
    ]
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(REPO),
        "HOME": str(tmp_path),
        "MERA_MULTI_CACHE": str(tmp_path / "cache" / "mera"),
        "HF_DATASETS_CACHE": str(tmp_path / "cache" / "datasets"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", CONVERT, "unisciencevqa", *map(str, folders)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (_, _), (small_rows, small), (big_rows, big) = json.loads(done.stdout.strip().splitlines()[-1])
    assert (small_rows, big_rows) == tuple(
        full_size_data.scaled_size("unisciencevqa", s) for s in scales[1:]
    )
    more_media = full_size_data.folder_bytes(folders[2]) - full_size_data.folder_bytes(folders[1])
    assert more_media > 150 * 1024**2  # pictures of ~250 KB
    # kept by the allocators, two thirds of the larger split's extra media stayed (measured
    # 105-145 MB here); handed back, what stays is the allocators' noise (10-55 MB)
    assert big - small < more_media * 2 / 5, (small, big, more_media)
