"""results.html: every answer of a run on one self-contained page, written by evaluate,
score and `mera-multi view`; checked in a real headless Chromium (the page loads without
console errors, the filters change the visible rows, the media load) and a screenshot
is kept as a test artifact."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from urllib.parse import quote

import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.outputs import MARKER

TASKS = "ruhhh_image,rutie_image,ruenvaqa,commonvideoqa,runaturalsciencevqa"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("page") / "run"
    assert (
        main(
            [
                "evaluate",
                "--tasks",
                TASKS,
                "--data",
                "sample",
                "--limit",
                "3",
                "--output-dir",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    return out


def _rows(page: str) -> list[str]:
    return re.findall(r'<tr class="ex [^"]*"[^>]*>', page)


def test_evaluate_writes_a_self_contained_page(run_dir):
    page = (run_dir / "results.html").read_text(encoding="utf-8")
    assert len(_rows(page)) == 15  # 5 tasks x 3 examples
    # no network: nothing is fetched from elsewhere
    assert not re.search(r'(src|href)="(https?:)?//', page) and "@import" not in page
    assert page.count("data:image/jpeg;base64,") >= 6  # ruHHH and ruTiE thumbnails
    assert "<audio controls" in page and "<video controls" in page
    doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert "results.html" in doc["run"]["files"]
    assert "results.html" in (run_dir / ".mera-multi-outputs.json").read_text()


class _Tables(HTMLParser):
    """The page's tables as rows of cell texts, and its list items."""

    def __init__(self):
        super().__init__()
        self.tables, self.items, self._cell = [], [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th", "li"):
            self._cell = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append(self._cell.strip())
        elif tag == "li":
            self.items.append(self._cell.strip())
        if tag in ("td", "th", "li"):
            self._cell = None


def _md_tables(md: str) -> list[list[list[str]]]:
    tables, current = [], None
    for line in md.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        if current is None:
            current = []
            tables.append(current)
        if not set(line) <= set("|-"):
            current.append([c.strip() for c in line.strip()[1:-1].split("|")])
    return tables


def test_the_page_summary_says_what_results_md_says(run_dir):
    page = _Tables()
    page.feed((run_dir / "results.html").read_text(encoding="utf-8"))
    md = (run_dir / "results.md").read_text(encoding="utf-8")
    summary = page.tables[:-1]  # the last table holds the examples
    # the main table, the totals and every breakdown, cell by cell, in results.md's order
    assert summary == _md_tables(md)[: len(summary)] and len(summary) >= 4
    cells = [c for table in summary for row in table for c in row]
    assert any("±" in c for c in cells) and "(supplementary)" in " ".join(cells)
    assert "(local estimate)" in " ".join(cells) and "human" in summary[0][0]
    assert any(re.fullmatch(r"0\.\d{4}", row[5]) for row in summary[0][1:])  # human baselines
    lines = [ln[2:] for ln in md.splitlines() if re.match(r"- \w+: task score ", ln)]
    assert lines and page.items == lines and any("covers only part" in ln for ln in lines)


def test_gold_is_shown_only_where_the_split_may_show_it(run_dir):
    page = (run_dir / "results.html").read_text(encoding="utf-8")
    private = re.findall(r'data-task="rutie_image".*?</tr>', page, flags=re.S)
    public = re.findall(r'data-task="ruenvaqa".*?</tr>', page, flags=re.S)
    assert private and all("hidden (private split)" in row for row in private)
    assert public and not any("hidden (private split)" in row for row in public)
    # the dialogue's earlier turns are shown with the model's reduced answer
    assert any('class="history"' in row for row in private)


def test_view_rebuilds_the_page_of_an_older_run(run_dir, tmp_path, capsys):
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    marker = json.loads((old / MARKER).read_text(encoding="utf-8"))  # made here, by a version
    (old / MARKER).write_text(
        json.dumps(
            {
                "folder": os.path.realpath(old),  # before the page
                "files": sorted(set(marker["files"]) - {"results.html"}),
            }
        )
    )
    (old / "results.html").unlink()
    assert main(["view", str(old)]) == 0
    rebuilt = (old / "results.html").read_text(encoding="utf-8")
    original = (run_dir / "results.html").read_text(encoding="utf-8")
    assert _rows(rebuilt) == _rows(original)
    assert rebuilt.count("data:image/jpeg") == original.count("data:image/jpeg")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "results.json").write_text("{}", encoding="utf-8")
    assert main(["view", str(tmp_path / "mine")]) == 2
    assert "results.json" in capsys.readouterr().err


def test_score_writes_the_page_with_the_model_name(tmp_path):
    from mera_multi_hf.data.loading import load_task

    ids = [m["id"] for m in load_task("ruenvaqa", source="sample", split="test")["meta"]]
    preds = tmp_path / "my-predictions.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"id": i, "prediction": "A", "model": "org/my-vlm"}) + "\n" for i in ids
        ),
        encoding="utf-8",
    )
    out = tmp_path / "scored"
    assert (
        main(
            [
                "score",
                "--task",
                "ruenvaqa",
                "--predictions",
                str(preds),
                "--data",
                "sample",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    page = (out / "results.html").read_text(encoding="utf-8")
    md = (out / "results.md").read_text(encoding="utf-8")
    assert "MERA Multi results: org/my-vlm" in page and "# MERA Multi results: org/my-vlm" in md
    assert "my-predictions" not in md.splitlines()[0]
    assert len(_rows(page)) == len(ids) and "<audio controls" in page
    assert "[results.html](results.html)" in md


def test_the_page_stays_small_on_the_whole_sample(tmp_path):
    from PIL import Image

    from mera_multi_hf.data.examples import make_examples, media_of
    from mera_multi_hf.data.loading import load_task
    from mera_multi_hf.reporting.results_page import THUMBNAIL, render, task_rows
    from mera_multi_hf.scoring.records import RunRecord, TaskResult
    from mera_multi_hf.tasks.table import TASKS as ALL

    rows, results = [], []
    for key, task in ALL.items():
        ds = load_task(task, source="sample", split="test")
        examples = make_examples(task, ds)
        records = [
            {
                "id": e.id,
                "prompt": e.prompt,
                "generation": "A",
                "filtered": "A",
                "target": e.gold,
                "metrics": {},
            }
            for e in examples
        ]
        rows += task_rows(key, "test", records, examples, media_of(task, examples, ds))
        results.append(
            TaskResult(
                key,
                task.class_name,
                task.modality,
                task.public,
                "test",
                len(examples),
                list(task.metrics),
                [],
                {},
                {},
            )
        )
    page = render(results, RunRecord.from_dict({"model": "m"}), rows)
    assert len(rows) > 100 and len(page) < 2_000_000
    for uri in re.findall(r'data:image/jpeg;base64,([^"]+)', page):
        with Image.open(io.BytesIO(base64.b64decode(uri))) as img:
            assert img.width <= THUMBNAIL[0] and img.height <= THUMBNAIL[1]


# In a real browser.


def _chromium(*args, url: str, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            *args,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _visible(dom: str) -> list[str]:
    return [row for row in re.findall(r'<tr class="ex [^"]*"[^>]*>', dom) if " hidden" not in row]


@needs_chromium
def test_the_page_in_chromium_loads_filters_and_plays(run_dir, tmp_path):
    page = run_dir / "results.html"
    proc = _chromium("--dump-dom", url=page.as_uri())
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln]
    assert proc.returncode == 0 and not console, console
    assert len(_visible(proc.stdout)) == 15 and "15 of 15 examples" in proc.stdout
    for fragment, expected in (
        ("task=rutie_image", 3),
        ("task=runaturalsciencevqa&domain=biology", None),
        ("q=" + quote("АУДИОзапис"), None),
    ):
        dom = _chromium("--dump-dom", url=page.as_uri() + "#" + fragment).stdout
        shown = _visible(dom)
        assert 0 < len(shown) < 15, fragment
        if expected:
            assert len(shown) == expected and all('data-task="rutie_image"' in r for r in shown)
    verdicts = {
        v: len(_visible(_chromium("--dump-dom", url=f"{page.as_uri()}#verdict={v}").stdout))
        for v in ("right", "wrong")
    }
    assert verdicts["right"] + verdicts["wrong"] == 15
    # every media element loads: a copy of the page reports what the browser decoded
    probe = tmp_path / "probe.html"
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8"
    )
    dom = _chromium("--dump-dom", url=probe.as_uri()).stdout
    report = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', dom, flags=re.S).group(1))
    assert report["images"] and all(w > 0 for w in report["images"]), report
    assert report["audio"] and all(report["audio"]), report
    # every video plays: the sample's MPEG-4 Part 2 clips are re-encoded to VP9 in WebM
    assert report["video"] and all(v == "ready" for v in report["video"]), report
    assert not any(report["errors"]), report
    # each clip plays for as long as the clip itself lasts, and the page says how long
    assert report["durations"] == pytest.approx(_clip_seconds(run_dir), abs=0.05), report
    shot = tmp_path / "results-page.png"
    _chromium(
        "--window-size=1400,1800", f"--screenshot={shot}", url=page.as_uri() + "#task=ruenvaqa"
    )
    assert shot.is_file() and shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


# Waits for every image, audio and video element to load (or fail), then writes what
# the browser decoded into the page.
PROBE = """<pre id="probe"></pre><script>
(function () {
  var media = Array.prototype.slice.call(document.querySelectorAll("audio, video"));
  var waits = media.map(function (m) {
    return new Promise(function (done) {
      if (m.readyState >= 1) { return done(); }
      m.addEventListener("loadedmetadata", done); m.addEventListener("error", done);
      m.load();
    });
  });
  Promise.all(waits).then(function () {
    var q = function (s) { return Array.prototype.slice.call(document.querySelectorAll(s)); };
    document.getElementById("probe").textContent = JSON.stringify({
      images: q("#examples img").map(function (i) { return i.naturalWidth; }),
      audio: q("audio").map(function (a) { return a.readyState >= 1 && a.duration > 0; }),
      video: q("video").map(function (v) {
        return v.readyState >= 1 && v.videoWidth > 0 ? "ready" : (v.error && v.error.code); }),
      frames: q("img.frame").map(function (i) { return i.naturalWidth; }),
      errors: q("video, audio").map(function (e) { return e.error && e.error.code; }),
      durations: q("video, audio").map(function (e) { return e.duration; })
    });
  });
})();
</script>
"""


def _clip_seconds(run_dir) -> list[float]:
    """The length of each clip the page embeds, in page order, decoded here (PyAV for the
    videos, soundfile for the audio), as the browser should report it."""
    import av
    import soundfile

    page = (run_dir / "results.html").read_text(encoding="utf-8")
    out = []
    for kind, data in re.findall(
        r'<(video|audio) controls preload="metadata" '
        r'src="data:[^;]+;base64,([^"]+)"',
        page,
    ):
        raw = io.BytesIO(base64.b64decode(data))
        if kind == "audio":
            info = soundfile.info(raw)
            out.append(info.frames / info.samplerate)
            continue
        with av.open(raw) as container:
            out.append(container.duration / 1e6)
    return out


def test_the_page_says_how_long_each_audio_clip_is(run_dir):
    page = (run_dir / "results.html").read_text(encoding="utf-8")
    shown = re.findall(r'<audio controls[^>]*></audio><span class="note">([\d.]+) s</span>', page)
    audio = [
        s
        for k, s in zip(re.findall(r"<(video|audio) controls", page), _clip_seconds(run_dir))
        if k == "audio"
    ]
    assert shown and [float(s) for s in shown] == [round(s, 1) for s in audio]


def _video_rows(key="commonvideoqa", limit=None):
    from mera_multi_hf.data.examples import make_examples, media_of
    from mera_multi_hf.data.loading import load_task
    from mera_multi_hf.reporting.results_page import task_rows
    from mera_multi_hf.tasks.table import TASKS as ALL

    ds = load_task(ALL[key], source="sample", split="test")
    examples = make_examples(ALL[key], ds)[:limit]
    records = [{"id": e.id, "generation": "A"} for e in examples]
    return task_rows(key, "test", records, examples, media_of(ALL[key], examples, ds))


def test_a_clip_that_cannot_be_re_encoded_shows_its_frames(monkeypatch):
    from mera_multi_hf.reporting import results_page as results_html

    (playable,) = _video_rows(limit=1)[0]["media"]
    assert playable["kind"] == "video" and playable["src"].startswith("data:video/webm;base64,")
    # an encoder that refuses its settings, as a PyAV built without libvpx would refuse
    monkeypatch.setattr(results_html, "VP9_OPTIONS", {"deadline": "no-such-deadline"})
    rows = _video_rows(limit=1)
    (item,) = rows[0]["media"]
    assert item["kind"] == "note" and "could not be re-encoded" in item["note"]
    assert len(item["frames"]) == 3 and all(f.startswith("data:image/jpeg") for f in item["frames"])
    from mera_multi_hf.scoring.records import RunRecord, TaskResult
    from mera_multi_hf.tasks.table import get_task

    task = get_task("commonvideoqa")
    result = TaskResult(
        task.key,
        task.class_name,
        task.modality,
        task.public,
        "test",
        1,
        list(task.metrics),
        [],
        {},
        {},
    )
    page = results_html.render([result], RunRecord.from_dict({"model": "m"}), rows)
    assert page.count('class="frame"') == 3 and "its frames are shown" in page
    assert "<video" not in page


def test_a_whole_video_split_costs_seconds():
    import time

    for key in ("commonvideoqa", "realvideoqa", "ruhhh_video"):
        started = time.perf_counter()
        rows = _video_rows(key)
        took = time.perf_counter() - started
        kinds = [m["kind"] for r in rows for m in r["media"]]
        assert kinds and set(kinds) == {"video"}, kinds
        print(f"{key}: {len(rows)} clips re-encoded in {took:.2f} s")
        assert took < 5 + 0.2 * len(rows), (key, took)


def test_a_big_run_keeps_the_page_within_its_media_budget():
    from mera_multi_hf.reporting.results_page import _within_budget

    item = {"kind": "image", "field": "image", "src": "data:image/jpeg;base64," + "A" * 1000}
    rows = [{"media": [dict(item)]} for _ in range(10)]
    _within_budget(rows, budget=5000)
    kinds = [r["media"][0]["kind"] for r in rows]
    assert kinds[:4] == ["image"] * 4 and set(kinds[5:]) == {"note"}
