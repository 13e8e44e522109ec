"""What the public APIs cost against the private internals they replaced, in one process,
rounds interleaved (ratios only; answers compared).

- arrow_split's check that a loaded split is its cache files' rows: ``cache_files`` plus
  a comparison of the rows (now) vs reading `datasets`' table blocks, indices and
  replays (before), on a split of N rows with media-sized binary cells; also a whole
  first load (``load_from_disk`` + ``ArrowSplit.of``) for scale;
- offline.in_hub_cache: ``huggingface_hub.scan_cache_dir``, once per process (now), vs
  the hand-coded folder test (before), on a cache of R repositories of 10 files each.

    python benchmarks/public_apis.py [--rows 2000 --cell-kb 50 --repos 200 --rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def _old_files_of(ds, cache_dir: Path):
    """arrow_split._files_of before (datasets' private table blocks)."""
    if ds._indices is not None:
        return None
    table = ds.data
    blocks = (
        [table]
        if not hasattr(table, "blocks")
        else [row[0] if len(row) == 1 else None for row in table.blocks]
    )
    files = []
    for block in blocks:
        path = getattr(block, "path", None)
        if path is None or any(
            r[0] != "replace_schema_metadata" for r in getattr(block, "replays", ())
        ):
            return None
        path = Path(os.path.realpath(path))
        if not path.is_relative_to(cache_dir):
            return None
        files.append(str(path.relative_to(cache_dir)))
    return files


def _old_in_hub_cache(repo_id: str, repo_type: str = "model") -> bool:
    from huggingface_hub import constants

    folder = Path(constants.HF_HUB_CACHE) / f"{repo_type}s--{repo_id.replace('/', '--')}"
    return (folder / "snapshots").is_dir() and any((folder / "snapshots").iterdir())


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def _rounds(sides: dict, rounds: int, args) -> dict:
    times = {name: [] for name in sides}
    answers = {}
    for i in range(rounds):
        for name in list(sides) if i % 2 == 0 else list(sides)[::-1]:
            seconds, answers[name] = _timed(sides[name], *args)
            times[name].append(seconds)
    assert len({repr(a) for a in answers.values()}) == 1, answers
    return {name: statistics.median(t) for name, t in times.items()}


def split_check(rows: int, cell_kb: int, rounds: int) -> None:
    import datasets

    from mera_multi_hf.data.arrow_split import ArrowSplit, _files_of

    root = Path(tempfile.mkdtemp()).resolve()
    cells = [os.urandom(cell_kb * 1024) for _ in range(rows)]
    datasets.Dataset.from_dict({"id": list(range(rows)), "image": cells}).save_to_disk(root / "s")
    ds = datasets.load_from_disk(root / "s")

    def first_load():
        return len(ArrowSplit.of(datasets.load_from_disk(root / "s")))

    med = _rounds(
        {
            "before (private)": lambda: _old_files_of(ds, root),
            "now (public)": lambda: _files_of(ds, root),
        },
        rounds,
        (),
    )
    load = statistics.median(_timed(first_load)[0] for _ in range(rounds))
    print(
        f"split check (once, when a manifest is written), {rows} rows x {cell_kb} KB "
        f"({rows * cell_kb / 1024:.0f} MB):"
    )
    for name, seconds in med.items():
        print(f"  {name}: {seconds * 1000:.2f} ms")
    extra = med["now (public)"] - med["before (private)"]
    print(
        f"  now - before: {extra * 1000:.1f} ms ({rows * cell_kb / 1024 / extra:.0f} MB/s "
        f"compared); a load itself (load_from_disk + ArrowSplit.of): {load * 1000:.1f} ms"
    )


def hub_cache(repos: int, rounds: int) -> None:
    root = Path(tempfile.mkdtemp())
    for i in range(repos):
        repo, commit = root / f"models--org--m{i}", f"{i:040x}"
        (repo / "snapshots" / commit).mkdir(parents=True)
        (repo / "blobs").mkdir()
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(commit)
        for f in range(10):
            (repo / "blobs" / f"b{f}").write_text("x")
            os.symlink(f"../../blobs/b{f}", repo / "snapshots" / commit / f"f{f}.json")
    from huggingface_hub import constants

    from mera_multi_hf.core import offline

    constants.HF_HUB_CACHE = str(root)
    ask = [f"org/m{repos - 1}", "org/absent"]

    def scanned():  # the first call of a process: the scan (then remembered)
        offline._STATE.pop(("cache", str(root)), None)
        return [offline.in_hub_cache(r) for r in ask]

    med = _rounds(
        {
            "before (hand-coded)": lambda: [_old_in_hub_cache(r) for r in ask],
            "now, first call (scan_cache_dir)": scanned,
            "now, later calls": lambda: [offline.in_hub_cache(r) for r in ask],
        },
        rounds,
        (),
    )
    print(f"in_hub_cache, a cache of {repos} repos of 10 files ({len(ask)} look-ups):")
    for name, seconds in med.items():
        print(f"  {name}: {seconds * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--cell-kb", type=int, default=50)
    parser.add_argument("--repos", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    split_check(args.rows, args.cell_kb, args.rounds)
    hub_cache(args.repos, args.rounds)


if __name__ == "__main__":
    main()
