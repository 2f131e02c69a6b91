"""Helpers shared by the benchmark scripts: robust timing, table printing, and counting
instructions under valgrind's callgrind."""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
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


def callgrind_instructions(
    args: list[str], env: dict | None = None, out_file: str | None = None
) -> int:
    """Instructions callgrind counted while ``python args...`` ran with counting off at its
    start: the child switches it on and off around what it measures
    (:func:`toggle_counting`). ``PYTHONHASHSEED`` is fixed, so reruns count the same.
    ``out_file`` keeps callgrind's profile (read it with ``callgrind_annotate``).
    """
    proc = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out_file or '/dev/null'}",
        ]
        + [sys.executable, *args],
        env={**os.environ, **(env or {}), "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        check=True,
    )
    m = re.search(r"Collected : (\d+)", proc.stderr)
    if m is None:
        raise RuntimeError(f"no callgrind total in: {proc.stderr[-500:]}")
    return int(m.group(1))


def toggle_counting(on: bool) -> None:
    """Switch callgrind's counting on or off for this process (which runs under it)."""
    subprocess.run(
        ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())],
        check=True,
        capture_output=True,
    )
