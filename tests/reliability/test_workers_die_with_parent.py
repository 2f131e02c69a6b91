"""``kill -9`` of ``urban-gym eval --workers N`` leaves no worker alive: each worker
process (holding a world) ends when the process that started it dies."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.eval.conftest import SG, cli


def children(pid: int) -> list[int]:
    """The live (not zombie) processes whose parent is ``pid`` (Linux ``/proc``)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            state, ppid = stat.rsplit(")", 1)[1].split()[:2]
            if int(ppid) == pid and state != "Z":
                out.append(int(d.name))
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_kill_9_of_eval_leaves_no_workers(tmp_path):
    out = tmp_path / "run"
    args = ["--agent", "random", "--seeds", "50", "--workers", "2", "--no-progress"]
    p = cli("eval", SG, "--out", str(out), *args, "--env-kwargs", '{"observation": "symbolic"}')
    workers: list[int] = []
    try:
        t0 = time.monotonic()
        while len(workers) < 2 or not (out / "episodes.jsonl").exists():
            assert p.poll() is None, p.stderr.read().decode()
            assert time.monotonic() - t0 < 120, "the workers did not start"
            workers = children(p.pid)
            time.sleep(0.05)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(30)
        t0 = time.monotonic()
        while any(alive(w) for w in workers) and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        left = [w for w in workers if alive(w)]
        assert not left, f"workers {left} outlived their parent {p.pid}"
    finally:
        for w in workers:  # this test's own processes, by id
            if alive(w):
                os.kill(w, signal.SIGKILL)
        if p.poll() is None:
            p.kill()
