"""How a score and a table are written in the text reports (results.md, the page):
shared by the run's report, its prompt tables and the leaderboard."""

from __future__ import annotations


def fmt_score(value) -> str:
    return "—" if value is None else f"{value:.4f}"


def fmt_interval(value, uncertainty: dict | None) -> str:
    """A score with its uncertainty: ``0.6200 ± 0.0300``, the ± half the width of the 95%
    bootstrap interval (resampled by cluster; the bounds are in results.json); a score
    of fewer than two clusters says so, as it has no interval: ``0.5000 (1 group, no ±)``."""
    if value is None or not uncertainty:
        return fmt_score(value)
    if uncertainty.get("low") is None:
        clusters = uncertainty.get("n_clusters")
        if clusters is None or clusters >= 2:
            return fmt_score(value)
        return f"{value:.4f} ({clusters} {uncertainty.get('cluster', 'cluster')}, no ±)"
    return f"{value:.4f} ± {(uncertainty['high'] - uncertainty['low']) / 2:.4f}"


def md_table(head: tuple, rows: list[tuple]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + [
        "| " + " | ".join(row) + " |" for row in rows
    ]
