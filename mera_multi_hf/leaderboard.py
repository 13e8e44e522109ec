"""`mera-multi leaderboard RUN ...`: several runs side by side (placeholder)."""
from __future__ import annotations


def add_parser(sub) -> None:
    pass
