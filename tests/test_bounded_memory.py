"""Memory that does not grow with a split: reading every medium of a split (as the
requests, the generation batches and the page read them) keeps the process's resident
set at about a chunk's media, because the memory-mapped Arrow cache hands back the pages
of each chunk read; and the page's media are written into the output folder's staging
area as they are made, never all held."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import full_size_data  # noqa: E402

from mera_multi_hf.core.outputs import OutputFolder  # noqa: E402
from mera_multi_hf.reporting.page_media import MediaFolder  # noqa: E402

# In a process of its own: the split prepared by a first load, then read from its
# manifest (memory-mapped) and every medium read, chunk by chunk; the largest growth of
# the resident set (file pages of the map included) over the reading is printed.
READ_ALL_MEDIA = """
import json, sys
from mera_multi_hf.data.examples import media_of
from mera_multi_hf.data.loaded import load_task_split
from mera_multi_hf.tasks.table import get_task

def resident():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmRSS"))

task = get_task(sys.argv[1])
load_task_split(task, sys.argv[2], "test")  # converts the folder, prepares the cache
loaded = load_task_split(task, sys.argv[2], "test")  # read from the manifest, mapped
start, growth, media = resident(), 0, 0
for _, items in media_of(task, loaded.examples, loaded.dataset, chunk=16):
    media += sum(len(item.data) for item in items)
    growth = max(growth, resident() - start)
print(json.dumps({"growth": growth, "media": media, "examples": len(loaded.examples)}))
"""


def test_reading_every_medium_of_a_split_keeps_the_resident_set_at_a_chunk(tmp_path):
    data = full_size_data.make_all(tmp_path / "data", 0.3, ["ruenvaqa"])
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
        [sys.executable, "-c", READ_ALL_MEDIA, "ruenvaqa", str(data["ruenvaqa"])],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["examples"] == full_size_data.scaled_size("ruenvaqa", 0.3)
    assert figures["media"] > 80 * 1024**2  # every clip read: ~0.6 MB each
    # a chunk of 16 clips is ~10 MB; kept mapped, the pages read would be all of them
    assert figures["growth"] < figures["media"] / 4, figures


def test_the_pages_media_are_written_as_made_into_the_output_folders_staging(tmp_path):
    out = OutputFolder(tmp_path / "run", kind="run")
    with out.claim(), out.staging() as stage:
        folder = MediaFolder("results_media", stage)
        first = folder.add(b"RIFF clip", "audio/wav")
        assert folder.add(b"RIFF clip", "audio/wav") == first  # stored once
        assert isinstance(folder.files[first], Path)  # on disk, not held
        assert folder.files[first].read_bytes() == b"RIFF clip"
        written = out.write_set({**folder.files, "results.html": "<html></html>"})
    assert written[first].read_bytes() == b"RIFF clip"
    assert first.startswith("results_media/") and first.endswith(".wav")
    assert not list((tmp_path / "run").glob(".mera-multi-staging-*"))  # gone after
