"""results.html: every answer of a run on one page, its media in results_media/ beside it,
written by evaluate, score and `mera-multi view`; checked in a real headless Chromium
(the page loads without console errors, the rows are drawn a page at a time, the filters
change the drawn rows, the media load) and a screenshot is kept as a test artifact."""

from __future__ import annotations

import hashlib
import html
import io
import json
import os
import re
import shutil
import subprocess
from collections import Counter
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


def page_json(page: str) -> dict:
    """A page's data as it holds it: fields, rows of coded cells, the shared texts."""
    return json.loads(
        re.search(r'<script type="application/json" id="page-data">(.*?)</script>', page, re.S)[1]
    )


def page_rows(page: str) -> list[dict]:
    """The rows a page holds, each a dict of fields, decoded as rows.js decodes them: a
    cell is an index into the texts, a string, or a list of both, joined; the JSON text
    of its value."""
    data = page_json(page)
    texts = data["texts"]

    def value(cell):
        if isinstance(cell, int):
            return json.loads(texts[cell])
        if isinstance(cell, str):
            return json.loads(cell)
        return json.loads("".join(texts[p] if isinstance(p, int) else p for p in cell))

    return [{f: value(c) for f, c in zip(data["fields"], cells)} for cells in data["rows"]]


def media_paths(rows: list[dict]) -> list[str]:
    """Every media file the rows name (relative to the page), in row order."""
    return [p for r in rows for m in r["media"] for p in [m.get("src"), *m.get("frames", [])] if p]


def test_evaluate_writes_a_page_with_its_media_beside_it(run_dir):
    page = (run_dir / "results.html").read_text(encoding="utf-8")
    rows = page_rows(page)
    assert len(rows) == 15 and '<tr class="ex' not in page  # 5 tasks x 3, drawn by the browser
    # no network: nothing is fetched from elsewhere; no medium inside the page
    assert not re.search(r'(src|href)="(https?:)?//', page) and "@import" not in page
    assert "base64" not in page and "data:" not in page
    kinds = [m["kind"] for r in rows for m in r["media"]]
    assert kinds.count("image") >= 6 and "audio" in kinds and "video" in kinds
    paths = media_paths(rows)
    assert paths and all(
        re.fullmatch(r"results_media/[0-9a-f]{16}\.(jpg|wav|webm)", p) for p in paths
    )
    stored = sorted(
        p.relative_to(run_dir).as_posix() for p in (run_dir / "results_media").iterdir()
    )
    assert stored == sorted(set(paths))  # each medium once, and only those the rows name
    for name in stored:  # named by the sha256 of its bytes
        assert hashlib.sha256((run_dir / name).read_bytes()).hexdigest().startswith(name[14:30])
    doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    marker = json.loads((run_dir / MARKER).read_text(encoding="utf-8"))
    for name in ["results.html", *stored]:  # listed with the run's other outputs
        assert name in doc["run"]["files"] and marker["files"][name] == "run"


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
    rows = page_rows((run_dir / "results.html").read_text(encoding="utf-8"))
    private = [r for r in rows if r["task"] == "rutie_image"]
    public = [r for r in rows if r["task"] == "ruenvaqa"]
    assert private and all(r["gold"] == "hidden (private split)" for r in private)
    assert public and not any(r["gold"] == "hidden (private split)" for r in public)
    # the dialogue's earlier turns are shown with the model's reduced answer
    assert any(r["history"] and "answer" in r["history"][0] for r in private)


def test_view_rebuilds_the_page_of_an_older_run(run_dir, tmp_path, capsys):
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    marker = json.loads((old / MARKER).read_text(encoding="utf-8"))  # made here, by a version
    before_page = {n for n in marker["files"] if n != "results.html" and "_media/" not in n}
    (old / MARKER).write_text(
        json.dumps({"folder": os.path.realpath(old), "files": sorted(before_page)})
    )
    (old / "results.html").unlink()
    shutil.rmtree(old / "results_media")
    assert main(["view", str(old)]) == 0
    rebuilt = page_rows((old / "results.html").read_text(encoding="utf-8"))
    original = page_rows((run_dir / "results.html").read_text(encoding="utf-8"))
    assert [(r["task"], r["id"], r["prompt"]) for r in rebuilt] == [
        (r["task"], r["id"], r["prompt"]) for r in original
    ]
    assert [m["kind"] for r in rebuilt for m in r["media"]] == [
        m["kind"] for r in original for m in r["media"]
    ]
    assert all((old / p).is_file() for p in media_paths(rebuilt))
    listed = json.loads((old / MARKER).read_text(encoding="utf-8"))
    assert all(listed["files"].get(p) == "run" for p in media_paths(rebuilt))
    assert main(["view", str(old)]) == 0  # again: the same files (bit-exact), none twice
    again = page_rows((old / "results.html").read_text(encoding="utf-8"))
    assert media_paths(again) == media_paths(rebuilt)
    assert sorted(p.name for p in (old / "results_media").iterdir()) == sorted(
        {p.split("/")[1] for p in media_paths(again)}
    )
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
    rows = page_rows(page)
    assert len(rows) == len(ids) and {m["kind"] for r in rows for m in r["media"]} == {"audio"}
    assert all((out / p).is_file() for p in media_paths(rows))
    assert "[results.html](results.html)" in md


@pytest.fixture(scope="module")
def whole_sample(tmp_path_factory):
    """The page of every bundled sample example (152 rows, more than the browser draws at
    first), written with its media folder: (folder, the page with media, the same page
    with none, the media folder)."""
    from mera_multi_hf.data.examples import make_examples, media_of
    from mera_multi_hf.data.loading import load_task
    from mera_multi_hf.reporting.page_media import MediaFolder
    from mera_multi_hf.reporting.results_page import MEDIA_FOLDER, render, task_rows
    from mera_multi_hf.scoring.records import RunRecord, TaskResult
    from mera_multi_hf.tasks.table import TASKS as ALL

    media, rows, bare, results = MediaFolder(MEDIA_FOLDER), [], [], []
    for key, task in ALL.items():
        ds = load_task(task, source="sample", split="test")
        examples = make_examples(task, ds)
        records = [
            {"id": e.id, "prompt": e.prompt, "generation": "A", "filtered": "A", "metrics": {}}
            for e in examples
        ]
        rows += task_rows(
            key, "test", records, examples, media_of(task, examples, ds), folder=media
        )
        bare += task_rows(key, "test", records, examples)
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
    run = RunRecord.from_dict({"model": "m"})
    out = tmp_path_factory.mktemp("whole")
    (out / "results.html").write_text(render(results, run, rows), encoding="utf-8")
    for name, data in media.files.items():
        (out / name).parent.mkdir(exist_ok=True)
        (out / name).write_bytes(data)
    return (
        out,
        (out / "results.html").read_text(encoding="utf-8"),
        render(results, run, bare),
        media,
        rows,
    )


def test_the_page_holds_rows_and_names_each_medium_once(whole_sample):
    from PIL import Image

    from mera_multi_hf.reporting.results_page import THUMBNAIL

    out, page, bare, media, _ = whole_sample
    rows = page_rows(page)
    assert len(rows) == 152 and "base64" not in page and "data:" not in page
    paths = media_paths(rows)
    assert len(paths) > 150 and set(paths) == set(media.files)  # every path resolves
    assert all((out / p).is_file() for p in paths)
    # each distinct medium once: ruHHH-Image's pairs share their picture, stored once
    ruhhh = [m["src"] for r in rows if r["task"] == "ruhhh_image" for m in r["media"]]
    assert len(ruhhh) == 26 and len(set(ruhhh)) < len(ruhhh) / 2
    digests = [hashlib.sha256(data).hexdigest() for data in media.files.values()]
    assert len(set(digests)) == len(digests) < len(paths) / 2
    # the page grows by a path per medium, far less than the media themselves
    stored = sum(map(len, media.files.values()))
    assert stored > 200_000 and len(page) - len(bare) < stored / 10
    for name, data in media.files.items():
        if name.endswith(".jpg"):
            with Image.open(io.BytesIO(data)) as img:
                assert img.width <= THUMBNAIL[0] and img.height <= THUMBNAIL[1]


@needs_chromium
def test_the_browser_draws_the_rows_a_page_at_a_time(whole_sample):
    out, page, _, _, _ = whole_sample
    url = (out / "results.html").as_uri()
    proc = _chromium("--dump-dom", url=url)
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln]
    assert proc.returncode == 0 and not console, console
    assert len(_visible(proc.stdout)) == 100 and "152 of 152 examples" in proc.stdout
    assert re.search(r'<img src="results_media/[0-9a-f]{16}\.jpg"', proc.stdout)
    # a filter searches all rows, not only those drawn
    dom = _chromium("--dump-dom", url=url + "#task=realvideoqa").stdout
    assert len(_visible(dom)) == 6 and all('data-task="realvideoqa"' in r for r in _visible(dom))
    # a row's own link draws the rows down to it
    last = page_rows(page)[-1]
    dom = _chromium("--dump-dom", url=f"{url}#{last['task']}-{last['id']}").stdout
    assert len(_visible(dom)) == 152


def test_the_page_keeps_each_shared_text_once(whole_sample):
    """The instruction sentences a task's prompts share are one text in the page's data,
    named by index; every row still resolves to its whole prompt and every field."""
    from mera_multi_hf.reporting.page_texts import SHARED_MIN

    _, page, _, _, rows = whole_sample
    data = page_json(page)
    texts = data["texts"]
    assert len(set(texts)) == len(texts)  # each distinct text once
    assert page_rows(page) == json.loads(json.dumps(rows))  # each row whole, every field
    named = Counter(
        p
        for cells in data["rows"]
        for cell in cells
        for p in (cell if isinstance(cell, list) else [cell])
        if isinstance(p, int)
    )
    assert set(named) == set(range(len(texts))) and min(named.values()) >= 2  # all shared
    # a sentence of ruCommonVQA's instruction: in each of its prompts, once in the page
    sentence = "одним словом или числом, без рассуждений.\\n"
    common = [r["prompt"] for r in rows if r["task"] == "rucommonvqa"]
    assert len(common) == 8 and all(sentence in p.replace("\n", "\\n") for p in common)
    assert sentence in texts and page.count("одним словом или числом, без рассуждений") == 1
    inline = [
        p for cells in data["rows"] for c in cells for p in (c if isinstance(c, list) else [c])
    ]
    assert not [p for p in inline if isinstance(p, str) and len(p) >= SHARED_MIN and p in texts]
    # much less than the same rows written out whole
    whole = json.dumps([list(r.values()) for r in rows], ensure_ascii=False, separators=(",", ":"))
    print(f"page data {len(_data_text(page))} bytes, rows written whole {len(whole)}")
    assert len(_data_text(page)) < 0.7 * len(whole.encode())


def _data_text(page: str) -> bytes:
    return re.search(r'id="page-data">(.*?)</script>', page, re.S)[1].encode()


@needs_chromium
def test_the_browser_shows_a_rows_whole_prompt(whole_sample):
    """A row drawn from the coded data shows its prompt as the model saw it, in full."""
    out, _, _, _, rows = whole_sample
    url = (out / "results.html").as_uri()
    for row in (rows[0], rows[-1]):  # the first page, and a row drawn by its link
        dom = _chromium("--dump-dom", url=f"{url}#{row['task']}-{row['id']}").stdout
        drawn = re.search(
            rf'<tr class="ex [^"]*" id="{row["task"]}-{row["id"]}".*?</tr>', dom, re.S
        )
        assert drawn and html.escape(row["prompt"], quote=False) in drawn[0], row["id"]
        assert html.escape(str(row["generation"]), quote=False) in drawn[0]


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
    probe.write_text(  # its media are the run's, beside the page
        page.read_text(encoding="utf-8")
        .replace("<head>", f'<head><base href="{run_dir.as_uri()}/">')
        .replace("</body>", PROBE + "</body>"),
        encoding="utf-8",
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
# the browser decoded into the page (a copy of it, whose <base> is the run's folder).
PROBE = """<pre id="probe"></pre><script>
(function () {
  var media = Array.prototype.slice.call(document.querySelectorAll("audio, video"));
  var waits = media.map(function (m) {
    return new Promise(function (done) {
      if (m.readyState >= 1) { return done(); }
      m.addEventListener("loadedmetadata", done); m.addEventListener("error", done);
      m.load();
    });
  }).concat(Array.prototype.slice.call(document.querySelectorAll("img")).map(function (i) {
    return new Promise(function (done) {
      if (i.complete) { return done(); }
      i.addEventListener("load", done); i.addEventListener("error", done);
    });
  }));
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
    """The length of each clip the page shows, in page order, decoded here from its file
    in the media folder (PyAV for the videos, soundfile for the audio), as the browser
    should report it."""
    import av
    import soundfile

    rows = page_rows((run_dir / "results.html").read_text(encoding="utf-8"))
    out = []
    for m in (m for r in rows for m in r["media"] if m["kind"] in ("audio", "video")):
        raw = io.BytesIO((run_dir / m["src"]).read_bytes())
        if m["kind"] == "audio":
            info = soundfile.info(raw)
            out.append(info.frames / info.samplerate)
            continue
        with av.open(raw) as container:
            out.append(container.duration / 1e6)
    return out


@needs_chromium
def test_the_page_says_how_long_each_audio_clip_is(run_dir):
    dom = _chromium("--dump-dom", url=(run_dir / "results.html").as_uri()).stdout
    shown = re.findall(
        r'<audio controls="" preload="metadata" src="[^"]+"></audio><span class="note">([\d.]+) s</span>',
        dom,
    )
    rows = page_rows((run_dir / "results.html").read_text(encoding="utf-8"))
    kinds = [m["kind"] for r in rows for m in r["media"] if m["kind"] in ("audio", "video")]
    audio = [s for k, s in zip(kinds, _clip_seconds(run_dir)) if k == "audio"]
    assert shown and [float(s) for s in shown] == [round(s, 1) for s in audio]


def _video_rows(key="commonvideoqa", limit=None, folder=None):
    from mera_multi_hf.data.examples import make_examples, media_of
    from mera_multi_hf.data.loading import load_task
    from mera_multi_hf.reporting.page_media import MediaFolder
    from mera_multi_hf.reporting.results_page import MEDIA_FOLDER, task_rows
    from mera_multi_hf.tasks.table import TASKS as ALL

    ds = load_task(ALL[key], source="sample", split="test")
    examples = make_examples(ALL[key], ds)[:limit]
    records = [{"id": e.id, "generation": "A"} for e in examples]
    folder = MediaFolder(MEDIA_FOLDER) if folder is None else folder
    return task_rows(
        key, "test", records, examples, media_of(ALL[key], examples, ds), folder=folder
    )


def test_a_clip_that_cannot_be_re_encoded_shows_its_frames(monkeypatch):
    from mera_multi_hf.reporting import results_page as results_html
    from mera_multi_hf.reporting.page_media import MediaFolder

    folder = MediaFolder("results_media")
    (playable,) = _video_rows(limit=1, folder=folder)[0]["media"]
    assert playable["kind"] == "video" and folder.files[playable["src"]][:4] == b"\x1aE\xdf\xa3"
    # an encoder that refuses its settings, as a PyAV built without libvpx would refuse
    monkeypatch.setattr(results_html, "VP9_OPTIONS", {"deadline": "no-such-deadline"})
    folder = MediaFolder("results_media")
    rows = _video_rows(limit=1, folder=folder)
    (item,) = rows[0]["media"]
    assert item["kind"] == "note" and "could not be re-encoded" in item["note"]
    assert len(item["frames"]) == 3 and all(
        folder.files[f][:2] == b"\xff\xd8" for f in item["frames"]
    )
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
    assert "its frames are shown" in page and page_rows(page)[0]["media"][0]["frames"]


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


def test_a_media_folder_is_replaced_whole_and_closed_with_its_page(tmp_path):
    """What the pages' writers ask of the boundary: a set of many files (one sync, not an
    fsync each), a media folder replaced whole beside files that stay, and a folder
    listed as private ("name/") closed with every file in it."""
    import stat

    from mera_multi_hf.core.outputs import add_files
    from mera_multi_hf.core.outputs.fs import SYNC_EACH_UP_TO

    out, many = tmp_path / "reports", SYNC_EACH_UP_TO + 36
    first = {f"compare_media/{i:016x}.jpg": bytes([i]) * 10 for i in range(many)}
    add_files(out, {"compare.md": "a", **first}, kind="report", replaces=["compare_media/"])
    assert len(list((out / "compare_media").iterdir())) == many
    assert stat.S_IMODE((out / "compare_media").stat().st_mode) != 0o700
    second = {"compare_media/ffffffffffffffff.jpg": b"new"}
    add_files(
        out,
        {"compare.html": "b", **second},
        kind="report",
        private=["compare.html", "compare_media/"],
        replaces=["compare_media/"],
    )
    assert [p.name for p in (out / "compare_media").iterdir()] == ["ffffffffffffffff.jpg"]
    assert (out / "compare.md").read_text() == "a"  # outside the replaced folder: kept
    assert stat.S_IMODE((out / "compare_media").stat().st_mode) == 0o700
    for name in ("compare.html", "compare_media/ffffffffffffffff.jpg"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "compare.md").stat().st_mode) != 0o600
    marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
    assert sorted(marker["files"]) == ["compare.html", "compare.md", *second]
