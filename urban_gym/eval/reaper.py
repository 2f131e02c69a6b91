"""Ends what a run's driver started when the driver dies without a chance to do it.

A local Ray that ``urban-gym eval --backend ray`` starts (``ray.init()``) runs as
processes of the driver's -- its GCS, its raylet, the raylet's agents and workers. Ray
ends most of them with the driver, but a driver killed with ``kill -9`` left two agents
(``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``) alive. :func:`start_reaper` starts
this file as a small process of its own (in a session of its own: a Ctrl-C for the
driver does not reach it) that notes, twice a second, every process descended from the
driver; when the driver is gone it sends ``SIGKILL`` to each of them still alive (the same
process: same id and start time), then exits. :func:`stop_reaper` ends it when the run ends
normally. Linux only (it reads ``/proc``); elsewhere nothing is started.

This file imports nothing of urban_gym: it runs as a script (``python reaper.py PID``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: Seconds between two looks at the driver's processes.
POLL_S = 0.5


def _stat(pid: int) -> tuple[int, str] | None:
    """``(parent pid, start time)`` of a live process (``/proc/PID/stat``), or None."""
    try:
        rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if rest[0] == "Z":  # a zombie: gone but for its parent's wait
        return None
    return int(rest[1]), rest[19]


def descendants(root: int) -> dict[int, str]:
    """Every live process descended from ``root``: pid -> start time (clock ticks)."""
    parents: dict[int, tuple[int, str]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = _stat(int(d.name))
            if st is not None:
                parents[int(d.name)] = st
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        p = frontier.pop()
        for pid, (ppid, start) in parents.items():
            if ppid == p and pid not in found:
                found[pid] = start
                frontier.append(pid)
    return found


def watch(driver: int, poll_s: float = POLL_S) -> None:
    """Note ``driver``'s descendants until it dies (this process's parent changes),
    then kill those still alive.
    """
    me = os.getpid()
    known: dict[int, str] = {}
    while os.getppid() == driver:
        known.update(descendants(driver))
        known.pop(me, None)
        time.sleep(poll_s)
    for pid, start in known.items():
        st = _stat(pid)
        if st is not None and st[1] == start:  # the same process, not a reused id
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def start_reaper() -> subprocess.Popen | None:
    """Start the reaper of this process (None where ``/proc`` does not exist)."""
    if not sys.platform.startswith("linux") or not Path("/proc/self/stat").exists():
        return None
    return subprocess.Popen(
        [sys.executable, "-S", str(Path(__file__).resolve()), str(os.getpid())],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def stop_reaper(proc: subprocess.Popen | None) -> None:
    """End a reaper of :func:`start_reaper` (the run ended by itself)."""
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(int(sys.argv[1]))
