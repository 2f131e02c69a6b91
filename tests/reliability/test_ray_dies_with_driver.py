"""``kill -9`` of ``urban-gym eval --backend ray`` leaves none of the processes of the
local Ray it started (its GCS, raylet, agents and actors) alive."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.eval.conftest import SG, cli
from tests.reliability.test_workers_die_with_parent import alive

pytest.importorskip("ray")


def descendants(root: int) -> dict[int, str]:
    from urban_gym.eval.reaper import descendants as of

    return of(root)


@pytest.mark.slow
def test_kill_9_of_a_ray_eval_leaves_no_ray_processes(tmp_path):
    out = tmp_path / "run"
    args = ["--agent", "random", "--seeds", "50", "--workers", "2", "--backend", "ray"]
    p = cli(
        "eval",
        SG,
        "--out",
        str(out),
        *args,
        "--no-progress",
        "--env-kwargs",
        '{"observation": "symbolic"}',
    )
    seen: dict[int, str] = {}
    try:
        t0 = time.monotonic()
        while not (out / "episodes.jsonl").exists():
            assert p.poll() is None, p.stderr.read().decode()
            assert time.monotonic() - t0 < 240, "the run did not get going"
            time.sleep(0.2)
        time.sleep(1.0)  # the agents start after the first actors
        seen = descendants(p.pid)
        assert len(seen) >= 4  # the reaper, GCS, raylet, actors, agents, ...
        os.kill(p.pid, signal.SIGKILL)
        p.wait(30)
        t0 = time.monotonic()
        while any(alive(q) for q in seen) and time.monotonic() - t0 < 20:
            time.sleep(0.2)
        left = [q for q in seen if alive(q)]
        assert not left, f"processes {left} of the run outlived its driver {p.pid}"
    finally:
        for q in seen:  # this test's own processes, by id
            if alive(q):
                os.kill(q, signal.SIGKILL)
        if p.poll() is None:
            p.kill()
