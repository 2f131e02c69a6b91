"""Helpers shared by the benchmark scripts: robust timing and table printing."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def time_call(fn: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """Median wall time in seconds of ``number`` calls of ``fn``, over ``repeat`` rounds,
    divided by ``number``."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t) / number)
    return statistics.median(times)


def print_table(title: str, rows: list[tuple[str, str, str, str]]) -> None:
    """Print ``(measurement, value, reference ratio, goal)`` rows as a Markdown table."""
    print(f"\n### {title}\n")
    print("| measurement | value | ratio to reference | goal |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
